from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler as DS


def train(model, dataset, optimizer, epochs):
    sampler = DS(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            model(batch).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
