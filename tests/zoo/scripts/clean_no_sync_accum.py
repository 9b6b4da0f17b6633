# zoo: expect=none
# Gradient accumulation done by the book: no_sync() on all but the last micro-batch, loss divided
# by the accumulation count, set_epoch every epoch, the logged loss all-reduced.
import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

ACCUMULATION_STEPS = 4
EPOCHS = 2


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    xs = torch.randn(512, 16)
    ys = (xs.pow(2).sum(1) > 16).long()
    dataset = TensorDataset(xs, ys)
    sampler = DistributedSampler(dataset, shuffle=True, seed=1)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, drop_last=True)
    ddp_model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.05, momentum=0.9)
    update = 0
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        accumulated = torch.zeros(())
        for i, (x, y) in enumerate(loader):
            boundary = (i + 1) % ACCUMULATION_STEPS == 0
            ctx = contextlib.nullcontext() if boundary else ddp_model.no_sync()
            with ctx:
                loss = nn.functional.cross_entropy(ddp_model(x), y) / ACCUMULATION_STEPS
                loss.backward()
            accumulated += loss.detach()
            if boundary:
                optimizer.step()
                optimizer.zero_grad()
                dist.all_reduce(accumulated)
                accumulated /= dist.get_world_size()
                if dist.get_rank() == 0 and update % 2 == 0:
                    print(f"update {update}: loss={accumulated.item():.4f}")
                accumulated.zero_()
                update += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
