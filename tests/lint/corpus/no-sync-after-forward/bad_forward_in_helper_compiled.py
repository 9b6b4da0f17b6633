# The forward runs in a helper handed the compiled wrapper of the DDP model; no_sync is entered on the
# DDP model only afterwards, around the backward: DDP already prepared its reducer in that forward.
import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_step(m, batch):
    out = m(batch["x"])
    return torch.nn.functional.cross_entropy(out, batch["y"])


def train(net, data, opt, accum, local_rank):
    model = DDP(net, device_ids=[local_rank])
    compiled = torch.compile(model)
    for step in range(1000):
        last = (step + 1) % accum == 0
        loss = train_step(compiled, next(data))
        ctx = model.no_sync() if not last else contextlib.nullcontext()
        with ctx:  # expect: no-sync-after-forward
            (loss / accum).backward()
        if last:
            opt.step()
            opt.zero_grad()
