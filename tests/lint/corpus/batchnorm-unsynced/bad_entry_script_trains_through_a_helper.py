# The entry script has no backward of its own: its epoch helper (same file) trains the DDP model.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train_one_epoch(model, loader, optimizer):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(loader, local_rank):
    dist.init_process_group("nccl")
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.LazyLinear(10)).cuda()
    model = DDP(model, device_ids=[local_rank])  # expect: batchnorm-unsynced
    train_one_epoch(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))


if __name__ == "__main__":
    main(None, 0)
