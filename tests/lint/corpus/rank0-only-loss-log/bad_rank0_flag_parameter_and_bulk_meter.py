# Fast-AutoAugment style: the epoch function logs under ``if verbose:``, and every caller binds
# ``verbose`` to a rank-0 test, so the logs run on rank 0 only; the meter is fed in bulk
# (``add_dict``) and returned, and the caller logs what it returns under its own rank-0 check. The
# evaluation call (optimizer None: no backward) leaves ``verbose`` to its default without mattering.
import torch
import torch.distributed as dist
from tqdm import tqdm


def run_epoch(model, loader, loss_fn, optimizer, writer=None, verbose=1):
    if verbose:
        loader = tqdm(loader)
    metrics = Accumulator()
    cnt = 0
    for data, label in loader:
        loss = loss_fn(model(data), label)
        if optimizer:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        metrics.add_dict({"loss": loss.item() * len(data)})
        cnt += len(data)
        if verbose:
            postfix = metrics / cnt
            loader.set_postfix(postfix)  # expect: rank0-only-loss-log
    metrics /= cnt
    if verbose:
        for key, value in metrics.items():
            writer.add_scalar(key, value)  # expect: rank0-only-loss-log
    return metrics


def train(model, loader, val_loader, criterion, optimizer, local_rank, writers):
    is_master = local_rank < 0 or dist.get_rank() == 0
    run_epoch(model, val_loader, criterion, None)
    for epoch in range(10):
        rs = dict()
        rs["train"] = run_epoch(model, loader, criterion, optimizer, writers[0], is_master and local_rank <= 0)
        if is_master:
            with torch.no_grad():  # an item stored here leaves rs["train"] the training value
                rs["valid"] = run_epoch(model, val_loader, criterion, None, writer=writers[1], verbose=is_master)
            print(f"epoch={epoch} train={rs['train']['loss']:.4f} valid={rs['valid']['loss']:.4f}")  # expect: rank0-only-loss-log
