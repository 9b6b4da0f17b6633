import torch
from torch.optim.lr_scheduler import OneCycleLR


def train(model, batches, accum):
    opt = torch.optim.AdamW(model.parameters())
    sched = OneCycleLR(opt, max_lr=1e-3, total_steps=1000)
    for step in range(1000):
        for micro in range(accum):
            loss = model(batches[step * accum + micro]).mean() / accum
            loss.backward()
            sched.step()  # expect: scheduler-per-microstep
        opt.step()
        opt.zero_grad()
