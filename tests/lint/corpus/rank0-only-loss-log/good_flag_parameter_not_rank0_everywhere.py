# A ``verbose`` parameter that one caller leaves to its default (every rank prints) and another
# binds to a plain option is not a rank-0 check: the function's logs run on every rank.
import torch.distributed as dist
from tqdm import tqdm


def run_epoch(model, loader, loss_fn, optimizer, verbose=1):
    if verbose:
        loader = tqdm(loader)
    for data, label in loader:
        loss = loss_fn(model(data), label)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if verbose:
            loader.set_postfix(loss=loss.item())


def show(model, loader, criterion, optimizer, quiet):
    run_epoch(model, loader, criterion, optimizer, verbose=dist.get_rank() == 0)
    run_epoch(model, loader, criterion, optimizer, verbose=not quiet)
    run_epoch(model, loader, criterion, optimizer)
