from accelerate import Accelerator
import torch.nn.functional as F

def train(model, optimizer, loader):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = F.cross_entropy(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            model.zero_grad()  # expect: zero-grad-inside-accum
