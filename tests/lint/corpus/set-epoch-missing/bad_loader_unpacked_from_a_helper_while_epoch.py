from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_dataloader(dataset):
    sampler = DistributedSampler(dataset)  # expect: set-epoch-missing
    dataloader = DataLoader(dataset, batch_size=8, sampler=sampler)
    return dataset, dataloader


def train_one_epoch(model, loader, optimizer):
    for batch in loader:
        model(batch).mean().backward()
        optimizer.step()
        optimizer.zero_grad()


def main(model, data, optimizer, max_epoch):
    _, train_dataloader = get_dataloader(data)
    epoch = 1
    while epoch <= max_epoch:
        train_one_epoch(model, train_dataloader, optimizer)
        epoch += 1
