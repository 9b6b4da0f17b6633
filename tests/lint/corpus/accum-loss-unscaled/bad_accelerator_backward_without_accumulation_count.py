from accelerate import Accelerator


def train(model, optimizer, loader, loss_fn, accum_steps):
    # built without gradient_accumulation_steps: accelerator.backward divides by 1
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y)
        accelerator.backward(loss)  # expect: accum-loss-unscaled, accum-no-sync-missing
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
