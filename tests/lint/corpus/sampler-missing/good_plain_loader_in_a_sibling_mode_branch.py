from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def train(model, ds, opt, mode):
    if mode == "single":
        loader = DataLoader(ds, batch_size=8, shuffle=True)
    elif mode == "multi":
        model = DDP(model)
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    for epoch in range(3):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for batch in loader:
            model(batch).mean().backward()
            opt.step()
            opt.zero_grad()
