# The same loop with an argument-less ``step()``: each call advances the schedule by one.
import torch


def train_epoch(model, loader, optimizer, accum_grad_iters):
    lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer)
    for i, batch in enumerate(loader):
        lr_scheduler.step()  # expect: scheduler-per-microstep
        loss = model(batch).mean() / accum_grad_iters
        loss.backward()
        if (i + 1) % accum_grad_iters == 0:
            optimizer.step()
            optimizer.zero_grad()
