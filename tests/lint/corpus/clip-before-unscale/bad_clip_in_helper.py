import torch

MAX_NORM = 1.0


def clip_gradients(model):
    torch.nn.utils.clip_grad_value_(model.parameters(), MAX_NORM)  # expect: clip-before-unscale


def train_step(model, batch, optimizer, amp_scaler):
    loss = model(batch).mean()
    amp_scaler.scale(loss).backward()
    clip_gradients(model)
    amp_scaler.step(optimizer)
    amp_scaler.update()
