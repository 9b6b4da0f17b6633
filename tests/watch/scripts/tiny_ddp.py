"""A tiny DDP loop for the watch tests: `--steps N`, `--sleep S` per step (so a watcher sees the run
while it runs), `--nan-at K` (the loss becomes NaN from step K on: a `nonfinite` finding to stop on)."""

import argparse
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--nan-at", type=int, default=-1)
args = p.parse_args()

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(1 + dist.get_rank())
for step in range(args.steps):
    x = torch.randn(4, 8, generator=g)
    loss = F.mse_loss(model(x), x.sum(1, keepdim=True))
    if step == args.nan_at:
        loss = loss * float("nan")
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    if args.sleep:
        time.sleep(args.sleep)
dist.destroy_process_group()
