# apex's DistributedDataParallel all-reduces in every backward unless `disable_allreduce()` runs
# first: here it never does, so each micro-step syncs (reported at the backward, where it happens).
from torch.nn.parallel import DistributedDataParallel


def train(module, loader, opt, accum):
    model = DistributedDataParallel(module)
    model.enable_allreduce()
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / accum
        loss.backward()  # expect: accum-no-sync-missing
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
