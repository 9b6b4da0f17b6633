# MONAI's DDP tutorials: standard output goes to os.devnull on every rank but 0, so a plain print
# of the loss shows rank 0's local value only (also an epoch sum returned by a same-file helper).
import os
import sys

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def train_epoch(model, loader, optimizer, criterion):
    epoch_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
        print(f"train_loss: {loss.item():.4f}")  # expect: rank0-only-loss-log
    return epoch_loss / len(loader)


def main(local_rank, model, loader, optimizer, criterion):
    if local_rank != 0:
        devnull = open(os.devnull, "w")
        sys.stdout = sys.stderr = devnull
    dist.init_process_group("nccl")
    model = DistributedDataParallel(model, device_ids=[local_rank])
    for epoch in range(5):
        epoch_loss = train_epoch(model, loader, optimizer, criterion)
        print(f"epoch {epoch} average loss: {epoch_loss:.4f}")  # expect: rank0-only-loss-log
