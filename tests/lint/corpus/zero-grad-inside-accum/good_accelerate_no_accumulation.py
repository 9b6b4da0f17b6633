# Accelerator() without gradient_accumulation_steps: accumulate() has nothing to accumulate, so a
# zero_grad at the top of the block clears only this step's (empty) gradients.
from accelerate import Accelerator
import torch.nn.functional as F


def train(model, optimizer, loader):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        with accelerator.accumulate(model):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
