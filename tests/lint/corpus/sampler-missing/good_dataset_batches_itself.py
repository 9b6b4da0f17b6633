# wenet-style: DataLoader(batch_size=None) turns automatic batching off; the dataset pipeline yields
# whole batches and splits the data by rank itself, so there is no sampler to shard.
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, args):
    model = DistributedDataParallel(model)
    loader = DataLoader(dataset, batch_size=None, num_workers=args.num_workers, pin_memory=True)
    for epoch in range(args.epochs):
        for batch in loader:
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    return torch.zeros(())
