import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, rank):
    model = torch.compile(model)
    return DDP(model, device_ids=[rank])  # expect: compile-before-ddp
