# The conversion and the wrap share the `if args.distributed and not args.horovod:` branch, and
# --no-bn-sync leaves the conversion on by default: converted where it is wrapped.
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--no-bn-sync", dest="use_bn_sync", action="store_false")
parser.add_argument("--horovod", action="store_true")
parser.add_argument("--distributed", action="store_true")
args = parser.parse_args()


def main(loader):
    model = nn.Sequential(nn.Conv1d(1, 8, 3), nn.BatchNorm1d(8))
    if args.distributed and not args.horovod:
        if args.use_bn_sync:
            model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    optimizer = torch.optim.Adam(model.parameters())
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
