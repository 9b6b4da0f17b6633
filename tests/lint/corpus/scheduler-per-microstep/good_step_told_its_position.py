# LAVIS-style: a stateless schedule keyed by the iteration index. ``step(cur_epoch, cur_step)`` sets
# the learning rate for that position, so calling it on every micro-step does not advance it.
import torch


class LinearWarmupScheduler:
    def __init__(self, optimizer, warmup_steps):
        self.optimizer = optimizer
        self.warmup_steps = warmup_steps

    def step(self, cur_epoch, cur_step):
        for group in self.optimizer.param_groups:
            group["lr"] = min(1.0, (cur_step + 1) / self.warmup_steps)


def train_epoch(model, loader, optimizer, epoch, accum_grad_iters):
    lr_scheduler = LinearWarmupScheduler(optimizer, warmup_steps=1000)
    for i, batch in enumerate(loader):
        lr_scheduler.step(cur_epoch=epoch, cur_step=i)
        loss = model(batch).mean() / accum_grad_iters
        loss.backward()
        if (i + 1) % accum_grad_iters == 0:
            optimizer.step()
            optimizer.zero_grad()
    return torch.zeros(())
