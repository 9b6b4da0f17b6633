"""STEPS DDP steps of the toy model with 2 micro-steps each (no_sync on the first), per-rank data."""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from toy import FEATURES, make_model

dist.init_process_group("gloo")
model = DDP(make_model())
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
gen = torch.Generator().manual_seed(dist.get_rank())
for step in range(int(os.environ.get("STEPS", "45"))):
    for micro in range(2):
        x = torch.randn(4, FEATURES, generator=gen)
        loss = F.mse_loss(model(x), x.sum(1, keepdim=True)) / 2
        if micro == 0:
            with model.no_sync():
                loss.backward()
        else:
            loss.backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
