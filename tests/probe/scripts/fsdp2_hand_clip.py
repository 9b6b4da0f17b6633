"""FSDP2 with a clip written by hand (no probe code): over each rank's local shards, or over the
whole gradient (the shard norms² all-reduced first). argv: MODE (shard | global) SYNC (last | every)
OUT_PREFIX. Accumulation 2: SYNC=last reduce-scatters on the last micro-step only
(`set_requires_gradient_sync`), SYNC=every on both, so the accumulated shard is the sum of two
reduce-scatter outputs. Each rank writes OUT_PREFIX.RANK.json: per optimizer step its shard norm
before the clip and the coefficient it applied (for the tests to compare with what the probe measured).
"""

import json
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, DistributedSampler
from toy import ACCUM, BATCH, make_dataset, make_model

MODE, SYNC, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
MAX_NORM = 0.05  # below every shard's norm: the clip acts at every step

dist.init_process_group("gloo")
model = make_model()
fully_shard(model[0])
fully_shard(model[2])
fully_shard(model)
sampler = DistributedSampler(make_dataset(), shuffle=True, seed=0)
loader = DataLoader(make_dataset(), batch_size=BATCH, sampler=sampler)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
applied = []
for i, (x, y) in enumerate(loader):
    last = (i + 1) % ACCUM == 0
    model.set_requires_gradient_sync(last or SYNC == "every")
    (F.mse_loss(model(x), y) / ACCUM).backward()
    if not last:
        continue
    shards = [p.grad.to_local() for p in model.parameters() if p.grad is not None]
    sq = sum(float(g.double().pow(2).sum()) for g in shards)
    total_sq = torch.tensor(sq, dtype=torch.float64)
    if MODE == "global":
        dist.all_reduce(total_sq)
    coef = min(1.0, MAX_NORM / (float(total_sq.sqrt()) + 1e-6))
    for g in shards:
        g.mul_(coef)
    applied.append({"shard_norm": sq**0.5, "coef": coef})
    optimizer.step()
    optimizer.zero_grad()
with open(f"{OUT}.{dist.get_rank()}.json", "w") as f:
    json.dump(applied, f)
dist.destroy_process_group()
