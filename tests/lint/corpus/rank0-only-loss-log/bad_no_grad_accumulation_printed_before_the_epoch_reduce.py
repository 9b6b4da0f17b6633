import sys

import torch
import torch.distributed as dist


def is_master(rank):
    return rank <= 0


def train(model, loader, optimizer, rank, device):
    model = torch.nn.parallel.DistributedDataParallel(model)
    total = torch.zeros(1, device=device)
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        # no_grad only keeps autograd off while reading the loss backpropagated above
        with torch.no_grad():
            total += loss.item()
        if step % 10 == 0 and is_master(rank):
            # the reduce below runs after the loop: this is rank 0's own running sum
            sys.stdout.write(f"loss {total.item() / (step + 1):.4f}\n")  # expect: rank0-only-loss-log
    dist.reduce(total, dst=0)
    if is_master(rank):
        sys.stdout.write(f"epoch loss {total.item() / len(loader):.4f}\n")
