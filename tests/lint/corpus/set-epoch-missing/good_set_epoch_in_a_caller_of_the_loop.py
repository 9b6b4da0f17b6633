from torch.utils.data import DataLoader, DistributedSampler


def make_loader(ds):
    sampler = DistributedSampler(ds)
    return DataLoader(ds, batch_size=8, sampler=sampler)


def main(model, ds, opt, epochs):
    loader = make_loader(ds)
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for batch in loader:
            model(batch).mean().backward()
            opt.step()
            opt.zero_grad()
