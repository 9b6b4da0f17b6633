import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, rank):
    model = DDP(model, device_ids=[rank])
    return torch.compile(model)
