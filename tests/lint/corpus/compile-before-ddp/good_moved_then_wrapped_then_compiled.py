import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, device, rank, other):
    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ddp = DDP(model.to(device), device_ids=[rank])
    other = torch.compile(other)
    model = other.to(device)  # rebound to another compiled module, but never wrapped
    return torch.compile(ddp), model
