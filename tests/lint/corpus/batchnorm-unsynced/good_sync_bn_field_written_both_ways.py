# The options class defaults `sync_bn` to False but the module-level configuration the script
# runs with sets it True: written two ways, the default is not known and the conversion is trusted.
from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn as nn


@dataclass
class TrainArgs:
    lr: float = 0.1
    sync_bn: bool = False


cfg = SimpleNamespace()
cfg.sync_bn = True


def main(args, loader, optimizer):
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).cuda()
    if args.sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = torch.nn.parallel.DistributedDataParallel(model)
    for x, _ in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
