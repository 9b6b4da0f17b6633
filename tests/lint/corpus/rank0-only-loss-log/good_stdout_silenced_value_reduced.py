# Standard output silenced off rank 0, but what is printed is the loss averaged over the ranks.
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main(local_rank, model, loader, optimizer, criterion):
    if local_rank != 0:
        sys.stdout = open(os.devnull, "w")
    dist.init_process_group("nccl")
    model = DistributedDataParallel(model, device_ids=[local_rank])
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        print(f"train_loss: {reduced.item() / dist.get_world_size():.4f}")

