import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.SyncBatchNorm(8), nn.BatchNorm2d(8))
    return DDP(model)
