import torch
from torch.nn.parallel import DistributedDataParallel


def train(model, rank, loader):
    # only the backbone is frozen: the head still trains through the wrap that searches the graph
    model = DistributedDataParallel(model, device_ids=[rank], find_unused_parameters=True)  # expect: find-unused-true
    for p in model.module.backbone.parameters():
        p.requires_grad = False
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
