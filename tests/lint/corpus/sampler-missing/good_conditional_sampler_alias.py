# The sampler class is chosen at run time: DistributedSampler when distributed (not a missing
# sampler; set_epoch is missing, though, whenever that branch runs).
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args, ds, model, opt):
    model = DDP(model)
    S = DistributedSampler if args.distributed else RandomSampler
    loader = DataLoader(ds, sampler=S(ds), batch_size=8)  # expect: set-epoch-missing
    if args.distributed:
        sampler = DistributedSampler(ds, shuffle=False)
    else:
        sampler = RandomSampler(ds)
    loader2 = DataLoader(ds, sampler=sampler, batch_size=8)
    for epoch in range(3):
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            opt.step()
        for x, y in loader2:
            model(x, y).backward()
            opt.step()
