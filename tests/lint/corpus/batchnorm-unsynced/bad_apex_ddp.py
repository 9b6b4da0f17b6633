import torch.nn as nn
from apex.parallel import DistributedDataParallel as DDP


def main(loader, optimizer):
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    model = DDP(model)  # expect: batchnorm-unsynced
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
