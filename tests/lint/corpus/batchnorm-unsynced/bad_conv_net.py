import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.bn = nn.BatchNorm2d(16)


def build(rank):
    model = Net().to(rank)
    model = DDP(model, device_ids=[rank])  # expect: batchnorm-unsynced
    return model
