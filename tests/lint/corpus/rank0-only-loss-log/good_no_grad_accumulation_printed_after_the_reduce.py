import sys

import torch
import torch.distributed as dist


def is_master(rank):
    return rank <= 0


def train(model, loader, optimizer, rank, device):
    model = torch.nn.parallel.DistributedDataParallel(model)
    total = torch.zeros(1, device=device)
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        with torch.no_grad():
            total += loss.item()
    dist.reduce(total, dst=0)
    if is_master(rank):
        sys.stdout.write(f"epoch loss {total.item() / len(loader):.4f}\n")
    with torch.no_grad():
        val = sum(model(b).mean().item() for b in loader)
        val_loss = val / len(loader)
    if is_master(rank):
        sys.stdout.write(f"val loss {val_loss:.4f}\n")
