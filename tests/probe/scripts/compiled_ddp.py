"""torch.compile applied to the DDP model, accumulation with no_sync (slow: cold compile)."""

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from toy import ACCUM, BATCH, FEATURES, make_model

dist.init_process_group("gloo")
model = torch.compile(DDP(make_model()))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(dist.get_rank())
for step in range(2):
    for micro in range(ACCUM):
        x = torch.randn(BATCH, FEATURES, generator=gen)
        last = micro == ACCUM - 1
        with contextlib.nullcontext() if last else model.no_sync():
            loss = F.mse_loss(model(x), x.sum(1, keepdim=True)) / ACCUM
            loss.backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
