from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs


def main(model, loader, optimizer):
    model.eval()  # evaluated once before training, then trained
    accelerator = Accelerator(
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]  # expect: find-unused-true
    )
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    model.train()
    for batch in loader:
        loss = model(batch).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
