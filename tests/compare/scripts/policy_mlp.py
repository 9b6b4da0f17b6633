"""A small MLP trained for a few steps under one precision/sharding policy (no probe code).

argv: POLICY, one of
  plain              one process or DDP, float32
  ddp-fp16-hook      DDP with the fp16_compress_hook (gradients all-reduced in float16)
  fsdp2              FSDP2 fully_shard, no mixed precision
  fsdp2-bf16         FSDP2 with MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)
Same seed, data and steps in every policy: two runs differ only in it.
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

POLICY = sys.argv[1]
STEPS = 6

distributed = "WORLD_SIZE" in os.environ
if distributed:
    dist.init_process_group("gloo")
rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 1))
if POLICY.startswith("fsdp2"):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if POLICY == "fsdp2-bf16"
        else MixedPrecisionPolicy()
    )
    fully_shard(model[0], mp_policy=mp)
    fully_shard(model, mp_policy=mp)
elif distributed:
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(model)
    if POLICY == "ddp-fp16-hook":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.Generator().manual_seed(1)
x_all = torch.randn(STEPS, 8, 16, generator=data)
y_all = x_all.sum(dim=2, keepdim=True)
for step in range(STEPS):
    x, y = x_all[step].chunk(world)[rank], y_all[step].chunk(world)[rank]
    loss = F.mse_loss(model(x).float(), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
if distributed:
    dist.destroy_process_group()
