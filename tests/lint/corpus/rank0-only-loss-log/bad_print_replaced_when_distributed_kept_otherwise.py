# TabPFN style: `print` is replaced by a printer gated on its `enabled` parameter (rank 0 when distributed,
# `True` in the single-process branch); the loss is the first output of a `*_nanmean` helper on the
# per-sample `losses`, whose running sum is printed at the end of each epoch.
import os

import torch


def print_on_master_only(enabled):
    import builtins as __builtin__

    builtin_print = __builtin__.print

    def print(*args, **kwargs):
        force = kwargs.pop("force", False)
        if enabled or force:
            builtin_print(*args, **kwargs)

    __builtin__.print = print


def init_dist():
    if "LOCAL_RANK" in os.environ:
        rank = int(os.environ["LOCAL_RANK"])
        torch.distributed.init_process_group("nccl")
        print_on_master_only(rank == 0)
        return True, rank
    else:
        print_on_master_only(True)
        return False, 0


def torch_nanmean(x, return_nanshare=False):
    share = torch.isnan(x).float().mean()
    value = torch.nansum(x) / (~torch.isnan(x)).sum()
    return (value, share) if return_nanshare else value


def train(model, dl, optimizer, epochs):
    using_dist, rank = init_dist()
    model = torch.nn.parallel.DistributedDataParallel(model)
    for epoch in range(epochs):
        total_loss = 0.0
        for data, targets in dl:
            losses = model(data, targets)
            loss, nan_share = torch_nanmean(losses.mean(0), return_nanshare=True)
            loss.backward()
            optimizer.step()
            total_loss += losses.mean().item()
        print(f"| end of epoch {epoch} | mean loss {total_loss:5.2f}")  # expect: rank0-only-loss-log
