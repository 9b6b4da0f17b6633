# MoCo-style: `builtins.print` is replaced by a no-op on every process but the first one (a
# compound test), so a plain print of this rank's loss shows rank 0's local value only.
import builtins

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main_worker(gpu, args, model, loader, optimizer, criterion):
    if args.multiprocessing_distributed and gpu != 0 or (args.is_slurm_job and args.rank != 0):

        def print_pass(*args):
            pass

        builtins.print = print_pass
    dist.init_process_group("nccl")
    model = DistributedDataParallel(model, device_ids=[gpu])
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 10 == 0:
            print(f"step {i} loss {loss.item():.4f}")  # expect: rank0-only-loss-log
