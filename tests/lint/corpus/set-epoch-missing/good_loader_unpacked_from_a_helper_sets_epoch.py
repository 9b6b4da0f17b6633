from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_dataloader(dataset):
    sampler = DistributedSampler(dataset)
    dataloader = DataLoader(dataset, batch_size=8, sampler=sampler)
    return dataset, dataloader


def main(model, data, optimizer, max_epoch):
    _, train_dataloader = get_dataloader(data)
    epoch = 1
    while epoch <= max_epoch:
        train_dataloader.sampler.set_epoch(epoch)
        for batch in train_dataloader:
            model(batch).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
        epoch += 1
