# accelerate prepared the model (DDP when distributed), but the micro-batch loop is hand-written:
# no accumulate(), no accelerator.no_sync(), so every micro-batch all-reduces.
from accelerate import Accelerator


def train(model, opt, dl, steps, accum):
    accelerator = Accelerator()
    model, opt, dl = accelerator.prepare(model, opt, dl)
    data = iter(dl)
    for step in range(steps):
        for _ in range(accum):
            loss = model(next(data)) / accum
            accelerator.backward(loss)  # expect: accum-no-sync-missing
        opt.step()
        opt.zero_grad()
