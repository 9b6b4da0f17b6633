# The scheduler is built in this file and never prepared (this file prepares nothing, the
# optimizer arrives prepared): accelerate does not skip its steps on non-final micro-steps.
import torch


def train_one_epoch(accelerator, model, optimizer, loader):
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)
    for images in loader:
        with accelerator.accumulate(model):
            loss = model(images).mean()
            accelerator.backward(loss)
            optimizer.step()
            sched.step()  # expect: scheduler-per-microstep
            optimizer.zero_grad()
