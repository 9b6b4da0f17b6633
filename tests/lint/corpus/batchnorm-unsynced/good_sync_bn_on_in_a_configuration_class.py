# The same script with the configuration class turning the conversion on: the default run
# converts before the wrap.
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class Config:
    distributed = True
    syncbn = True
    epochs = 10


def fit(config, loader, optimizer):
    model = nn.Sequential(nn.Linear(16, 16), nn.BatchNorm1d(16)).cuda()
    if config.syncbn:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = DistributedDataParallel(model, device_ids=[0])
    for x, _ in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


if __name__ == "__main__":
    fit(Config, [], None)
