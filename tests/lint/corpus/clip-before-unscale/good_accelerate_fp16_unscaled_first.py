# The fp16 accelerator's gradients are unscaled before torch's clip; a bf16 accelerator keeps no scaler.
import torch
from accelerate import Accelerator


def train(model, optimizer, loader):
    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer = accelerator.prepare(model, optimizer)
    for batch in loader:
        accelerator.backward(model(batch))
        accelerator.unscale_gradients()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()


def train_bf16(model, optimizer, loader):
    bf16 = Accelerator(mixed_precision="bf16")
    model, optimizer = bf16.prepare(model, optimizer)
    for batch in loader:
        bf16.backward(model(batch))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
