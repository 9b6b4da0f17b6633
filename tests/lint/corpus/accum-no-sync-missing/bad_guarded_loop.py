import torch.nn as nn
import torch.nn.functional as F


def train(module, loader, opt, grad_accum):
    ddp = nn.parallel.DistributedDataParallel(module)
    for i, (x, y) in enumerate(loader):
        loss = F.cross_entropy(ddp(x), y) / grad_accum
        loss.backward()  # expect: accum-no-sync-missing
        if (i + 1) % grad_accum == 0:
            opt.step()
            opt.zero_grad()
