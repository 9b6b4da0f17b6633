from torch.utils.data import DataLoader, DistributedSampler


def main(model, ds, opt):
    loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds))
    for epoch in range(10):
        loader.sampler.set_epoch(epoch)
        for batch in loader:
            model(batch).loss.backward()
            opt.step()
