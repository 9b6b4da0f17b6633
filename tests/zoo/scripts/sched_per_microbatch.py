# zoo: expect=scheduler-per-microstep
# Accumulation with no_sync done right, but the warmup/cosine scheduler is stepped once per
# micro-batch instead of once per optimizer step (the schedule runs 4x too fast).
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.optim.lr_scheduler import OneCycleLR

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)

accumulate = 4
steps = 16
model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = OneCycleLR(optimizer, max_lr=1e-3, total_steps=steps * accumulate + 1)
gen = torch.Generator().manual_seed(100 + rank)

for step in range(steps):
    for micro in range(accumulate):
        x = torch.randn(8, 32, generator=gen)
        ctx = model.no_sync() if micro < accumulate - 1 else nullcontext()
        with ctx:
            loss = nn.functional.mse_loss(model(x), x.flip(1)) / accumulate
            loss.backward()
        scheduler.step()
    optimizer.step()
    optimizer.zero_grad()

if rank == 0:
    print("finished", steps, "steps")
dist.destroy_process_group()
