# flowtron style: the sampler and the loader's shuffle flag are bound together in one tuple
# assignment; the loader comes back from a helper and is looped over epochs with no set_epoch.
from torch.utils.data import DataLoader, DistributedSampler


def prepare_dataloaders(trainset, n_gpus, batch_size):
    train_sampler, shuffle = None, True
    if n_gpus > 1:
        train_sampler, shuffle = DistributedSampler(trainset), False  # expect: set-epoch-missing
    return DataLoader(trainset, shuffle=shuffle, sampler=train_sampler, batch_size=batch_size)


def train(model, trainset, n_gpus, epochs, optimizer):
    train_loader = prepare_dataloaders(trainset, n_gpus, 4)
    for _epoch in range(epochs):
        for batch in train_loader:
            model.zero_grad()
            model(batch).backward()
            optimizer.step()
