import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, device, rank):
    # the module moved to its device inside the wrap call is still the compiled one
    model = torch.compile(model)
    return DDP(model.to(device), device_ids=[rank])  # expect: compile-before-ddp


def build_synced(model, rank):
    # SyncBatchNorm conversion keeps the compiled top module: still compile-before-DDP
    model = torch.compile(model)
    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.cuda()
    return DDP(model, device_ids=[rank])  # expect: compile-before-ddp
