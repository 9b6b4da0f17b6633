# apex's DistributedDataParallel skips the all-reduce of the backwards between
# `disable_allreduce()` and `enable_allreduce()`: the micro-steps before the last do not sync.
from apex.parallel import DistributedDataParallel


def train(module, loader, opt, accum):
    model = DistributedDataParallel(module)
    for i, batch in enumerate(loader):
        last = (i + 1) % accum == 0
        if not last:
            model.disable_allreduce()
        else:
            model.enable_allreduce()
        loss = model(batch).mean() / accum
        loss.backward()
        if last:
            opt.step()
            opt.zero_grad()
