# The context is picked from a name that holds the DDP model's `no_sync` (two names away from
# `model.no_sync`): the micro-steps before the update still skip the sync.
from contextlib import nullcontext

from torch.nn.parallel import DistributedDataParallel


def train(module, loader, opt, criterion, accum, distributed):
    net = DistributedDataParallel(module)
    no_sync_cm = nullcontext
    if distributed:
        no_sync_cm = net.no_sync
    for i, (x, y) in enumerate(loader):
        update = (i + 1) % accum == 0
        sync_context = no_sync_cm if update is False else nullcontext
        with sync_context():
            loss = criterion(net(x), y) / accum
            loss.backward()
        if update:
            opt.step()
            opt.zero_grad()
