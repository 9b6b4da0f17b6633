import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def train(model, ds, opt, distributed):
    if distributed:
        model = DDP(model)
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
    else:
        # the branch the condition takes when the run is not distributed
        loader = DataLoader(ds, batch_size=8, shuffle=True)
    for epoch in range(3):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for batch in loader:
            torch.nn.functional.mse_loss(model(batch), batch).backward()
            opt.step()
            opt.zero_grad()
