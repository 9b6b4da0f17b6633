from torch import nn
from torch.nn.parallel import DistributedDataParallel


def make(dim):
    body = nn.Sequential(nn.Linear(dim, dim), nn.BatchNorm1d(dim), nn.ReLU())
    return DistributedDataParallel(body)  # expect: batchnorm-unsynced
