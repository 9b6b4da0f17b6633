from torch.utils.data import DataLoader, DistributedSampler


def pretrain_small(model, ds, opt, epochs):
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            model(batch).mean().backward()
            opt.step()
            opt.zero_grad()


def pretrain_large(model, ds, opt, epochs):
    # the set_epoch above sets another def's sampler; nothing here runs it
    large_sampler = DistributedSampler(ds)  # expect: set-epoch-missing
    large_loader = DataLoader(ds, batch_size=8, sampler=large_sampler)
    for epoch in range(epochs):
        for batch in large_loader:
            model(batch).mean().backward()
            opt.step()
            opt.zero_grad()
