# minimind GRPO: the micro-steps run the model through `model.module`, bypassing DDP's forward, so
# DDP's reducer never runs and nothing is all-reduced (each rank trains its own copy — a different
# bug). There is no per-micro-step all-reduce for a `no_sync` to skip: not accum-no-sync-missing.
import torch
from torch.nn.parallel import DistributedDataParallel


def train_epoch(optimizer, loader, accumulation_steps):
    for step, batch in enumerate(loader):
        unwrapped = model.module if isinstance(model, DistributedDataParallel) else model
        loss = unwrapped(batch).mean() / accumulation_steps
        loss.backward()
        if step % accumulation_steps == 0:
            torch.nn.utils.clip_grad_norm_(unwrapped.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    model = DistributedDataParallel(torch.nn.Linear(4, 4), device_ids=[0])
    train_epoch(torch.optim.SGD(model.parameters(), lr=0.1), [], 4)
