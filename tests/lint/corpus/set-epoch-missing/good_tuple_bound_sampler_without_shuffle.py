# The tuple-bound sampler does not shuffle: the order is meant to repeat, nothing to set.
from torch.utils.data import DataLoader, DistributedSampler


def train(model, trainset, epochs, optimizer):
    train_sampler, drop = DistributedSampler(trainset, shuffle=False), True
    train_loader = DataLoader(trainset, sampler=train_sampler, batch_size=4, drop_last=drop)
    for _epoch in range(epochs):
        for batch in train_loader:
            model.zero_grad()
            model(batch).backward()
            optimizer.step()
