# A dataclass of options whose `sync_bn` field defaults to False, and a module-level
# configuration object setting it: the conversion is opt-in, the default run unsynced (gated).
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class TrainArgs:
    lr: float = 0.1
    sync_bn: bool = False


def main(args: TrainArgs, loader, optimizer):
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).cuda()
    if args.sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = torch.nn.parallel.DistributedDataParallel(model)  # expect: batchnorm-unsynced
    for x, _ in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
