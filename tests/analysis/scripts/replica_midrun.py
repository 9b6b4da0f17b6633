"""A plain DDP loop where one rank changes its weights in place from step 10 of 48 (a per-rank
"EMA"/weight tweak written outside DDP): the replicas drift apart mid-run.
`python replica_midrun.py [--no-destroy]` (without destroy_process_group the probe's final
checksum comes from its exit handler)."""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS, BATCH = 48, 16

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)
w = torch.randn(8, 1, generator=torch.Generator().manual_seed(7))
for step in range(STEPS):
    x = torch.randn(BATCH, 8, generator=g)
    y = x @ w + 0.1 * torch.randn(BATCH, 1, generator=g)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 1 and step >= 10:
        with torch.no_grad():
            model.module[0].weight.mul_(0.999)
    if rank == 0 and step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
if "--no-destroy" not in sys.argv:
    dist.destroy_process_group()
