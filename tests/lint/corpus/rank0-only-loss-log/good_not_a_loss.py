# Accuracies and augmentation probabilities are not the loss, even when they come out of the
# same call or are printed next to a reduced loss.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, model, loader, optimizer, criterion, augment_pipe):
    model = DDP(model)
    for x, y in loader:
        loss, acc1 = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ada_aug_p = float(augment_pipe.p)
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        if rank == 0:
            print(f"loss {reduced.item() / dist.get_world_size():.3f} acc {acc1:.2f} augment {ada_aug_p:.3f}")
    with torch.no_grad():
        pass
