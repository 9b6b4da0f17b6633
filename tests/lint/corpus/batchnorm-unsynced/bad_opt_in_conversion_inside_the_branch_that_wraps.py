# LAION-CLAP: `if args.distributed and not args.horovod:` holds both the opt-in conversion and the
# wrap. That condition decides whether there is a wrap, not whether the model is converted: with
# --use-bn-sync off by default the wrapped BatchNorm model is unsynced (gated).
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--use-bn-sync", action="store_true")
parser.add_argument("--horovod", action="store_true")
parser.add_argument("--distributed", action="store_true")
args = parser.parse_args()


def main(loader):
    model = nn.Sequential(nn.Conv1d(1, 8, 3), nn.BatchNorm1d(8))
    if args.distributed and not args.horovod:
        if args.use_bn_sync:
            model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])  # expect: batchnorm-unsynced
    optimizer = torch.optim.Adam(model.parameters())
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
