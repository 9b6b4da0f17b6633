from torch.utils.data import DataLoader, DistributedSampler


def train_one_epoch(model, loader, opt):
    for batch in loader:
        model(batch).loss.backward()
        opt.step()
        opt.zero_grad()


def main(model, ds, opt):
    train_sampler = DistributedSampler(ds, seed=42)  # expect: set-epoch-missing
    train_loader = DataLoader(ds, batch_size=2, sampler=train_sampler)
    for epoch in range(10):
        train_one_epoch(model, train_loader, opt)
