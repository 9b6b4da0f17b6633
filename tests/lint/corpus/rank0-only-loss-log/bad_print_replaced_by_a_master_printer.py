# MAE/DeiT `setup_for_distributed(is_master)`: print is rebound to a function that calls the
# original print only when `is_master or force`; every call binds is_master to a rank-0 test.
import builtins as __builtin__

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def setup_for_distributed(is_master):
    builtin_print = __builtin__.print

    def print(*args, **kwargs):
        force = kwargs.pop("force", False)
        if is_master or force:
            builtin_print(*args, **kwargs)

    __builtin__.print = print


def main(rank, model, loader, optimizer, criterion):
    dist.init_process_group("nccl")
    setup_for_distributed(rank == 0)
    model = DistributedDataParallel(model)
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch loss {total / len(loader):.4f}")  # expect: rank0-only-loss-log
