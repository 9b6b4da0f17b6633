from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def train(model, ds, opt, args):
    model = DDP(model)
    if args.sampler == "triplet":
        # the distributed sampler is only one option of this branch, not what the condition picks
        if args.distributed:
            loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
        else:
            loader = DataLoader(ds, batch_size=8)
    else:
        loader = DataLoader(ds, batch_size=8, shuffle=True)  # expect: sampler-missing
    for epoch in range(3):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for batch in loader:
            model(batch).mean().backward()
            opt.step()
            opt.zero_grad()
