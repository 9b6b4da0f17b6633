import torch
from apex import amp


def train(model, loader, optimizer, fp16):
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
            torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)  # expect: clip-before-unscale
        optimizer.step()
        optimizer.zero_grad()
