"""FSDP2 with accumulation (`set_requires_gradient_sync`), clip_grad_norm_ and AdamW (no probe code).

Rank 0 writes, per optimizer step, norms computed directly with `full_tensor()` (every rank calls
it at the same point, as user code may), for the probe tests to compare with what was recorded:
the global gradient norm² before clipping, clip_grad_norm_'s total norm, per-parameter gradient,
parameter (before and after the step) and update norms², and the count of AdamW second moments below eps². argv: OUT.json
[PARAMS.pt]: the final full parameters go to PARAMS.pt (bit-identity with and without the probe).
"""

import json
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, DistributedSampler
from toy import ACCUM, BATCH, EPOCHS, make_dataset, make_model

MAX_NORM = 0.5
EPS = 1e-3  # large, so that some second moments fall below eps² and the count is not trivially 0

dist.init_process_group("gloo")
model = make_model()
fully_shard(model[0])
fully_shard(model[2])
fully_shard(model)
dataset = make_dataset()
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, eps=EPS)


def full_sq(tensors):
    return [float(t.full_tensor().double().pow(2).sum()) for t in tensors]


direct = []
for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % ACCUM == 0
        model.set_requires_gradient_sync(last)
        loss = F.mse_loss(model(x), y) / ACCUM
        loss.backward()
        if last:
            names = [n for n, _ in model.named_parameters()]
            params = [p for _, p in model.named_parameters()]
            grad_sq = full_sq([p.grad for p in params])
            before = [p.full_tensor().detach().clone() for p in params]
            total = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
            optimizer.step()
            optimizer.zero_grad()
            after = [p.full_tensor().detach() for p in params]
            v = [optimizer.state[p]["exp_avg_sq"].full_tensor() for p in params]
            direct.append(
                {
                    "names": names,
                    "grad_sq": grad_sq,
                    "clip_total": float(total.full_tensor()),
                    "param_sq": [float(b.double().pow(2).sum()) for b in before],
                    "param_sq_after": [float(a.double().pow(2).sum()) for a in after],
                    "update_sq": [float((a - b).double().pow(2).sum()) for a, b in zip(after, before)],
                    "below": sum(int((t < EPS * EPS).sum()) for t in v),
                    "numel": sum(t.numel() for t in v),
                }
            )

full = {name: p.full_tensor().detach().clone() for name, p in model.named_parameters()}
if dist.get_rank() == 0:
    with open(sys.argv[1], "w") as f:
        json.dump(direct, f)
    if len(sys.argv) > 2:
        torch.save(full, sys.argv[2])
dist.destroy_process_group()
