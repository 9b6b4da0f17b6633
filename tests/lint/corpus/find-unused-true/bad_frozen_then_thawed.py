import torch
from torch.nn.parallel import DistributedDataParallel


def train(model, rank, loader, warmup):
    model = DistributedDataParallel(model, device_ids=[rank], find_unused_parameters=True)  # expect: find-unused-true
    # frozen for a warm-up, then the head is thawed and trained
    model.requires_grad_(False)
    model.module.head.requires_grad_(True)
    optimizer = torch.optim.SGD(model.module.head.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
