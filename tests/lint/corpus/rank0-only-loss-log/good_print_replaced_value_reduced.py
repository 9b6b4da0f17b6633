# print replaced off rank 0 (MAE/DeiT setup_for_distributed), but the printed loss is all-reduced first.
import builtins

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def setup_for_distributed(is_master):
    original = builtins.print

    def quiet(*args, **kwargs):
        if is_master:
            original(*args, **kwargs)

    builtins.print = quiet


def main(rank, model, loader, optimizer, criterion):
    dist.init_process_group("nccl")
    setup_for_distributed(rank == 0)
    model = DistributedDataParallel(model)
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        print(f"loss {reduced.item() / dist.get_world_size():.4f}")
