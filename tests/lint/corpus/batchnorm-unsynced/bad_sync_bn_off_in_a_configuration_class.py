# kaggle-style: the conversion hangs on `config.syncbn`, an attribute of the script's own
# configuration class that is off: the default run wraps the BatchNorm model unsynced (gated).
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class Config:
    distributed = True
    syncbn = False
    epochs = 10


def fit(config, loader, optimizer):
    model = nn.Sequential(nn.Linear(16, 16), nn.BatchNorm1d(16)).cuda()
    if config.syncbn:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = DistributedDataParallel(model, device_ids=[0])  # expect: batchnorm-unsynced
    for x, _ in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


if __name__ == "__main__":
    fit(Config, [], None)
