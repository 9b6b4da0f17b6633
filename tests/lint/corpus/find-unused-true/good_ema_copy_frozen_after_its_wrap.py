import copy

import torch
from torch.nn.parallel import DistributedDataParallel


def train(net, rank, loader):
    ema_net = copy.deepcopy(net)
    net = DistributedDataParallel(net, device_ids=[rank])
    # the EMA copy is wrapped with the flag, then every parameter of it is frozen: no graph to search
    ema_net = DistributedDataParallel(ema_net, device_ids=[rank], find_unused_parameters=True)
    for p in ema_net.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            for e, m in zip(ema_net.parameters(), net.parameters()):
                e.mul_(0.999).add_(m, alpha=0.001)
