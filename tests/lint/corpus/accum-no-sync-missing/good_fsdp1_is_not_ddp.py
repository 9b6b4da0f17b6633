# FSDP1 reduce-scatters gradients; its accumulation is outside accum-no-sync-missing (DDP all-reduce).
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

def train(model, loader, opt, accum):
    model = FSDP(model)
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
