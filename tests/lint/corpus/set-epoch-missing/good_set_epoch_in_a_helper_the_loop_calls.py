from torch.utils.data import DataLoader, DistributedSampler


def start_epoch(loader, epoch):
    loader.sampler.set_epoch(epoch)


def train_one_epoch(model, loader, opt):
    for batch in loader:
        model(batch).mean().backward()
        opt.step()
        opt.zero_grad()


def main(model, ds, opt, epochs):
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    for epoch in range(epochs):
        start_epoch(loader, epoch)
        train_one_epoch(model, loader, opt)
