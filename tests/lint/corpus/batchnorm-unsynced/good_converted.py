import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build(rank):
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return DDP(model, device_ids=[rank])
