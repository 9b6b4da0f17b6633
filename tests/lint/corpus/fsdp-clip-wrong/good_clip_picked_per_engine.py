import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def wrap(model, engine):
    if engine == "fsdp":
        model = FSDP(model)
    return model


def step(model, optimizer, engine, clip):
    # the script picks the clip per engine: the torch function only on its DDP path
    if engine == "ddp":
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    else:
        grad_norm = model.clip_grad_norm_(clip)
    optimizer.step()
    return grad_norm
