import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, compile_first):
    if compile_first:
        model = torch.compile(model)
    return DDP(model)
