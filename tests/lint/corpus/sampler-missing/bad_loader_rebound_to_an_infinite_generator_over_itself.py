# The DistributedSampler is commented out; the loader is then rebound to a generator over itself
# (`train_loader = sample_data(train_loader)`): the training loop still draws the same unsharded,
# shuffled batches on every rank.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def sample_data(loader):
    while True:
        for batch in loader:
            yield batch


def main(model, dataset, optimizer, steps):
    dist.init_process_group("nccl")
    train_loader = DataLoader(dataset, shuffle=True, batch_size=8)  # expect: sampler-missing
    train_loader = sample_data(train_loader)
    model = torch.nn.parallel.DistributedDataParallel(model)
    for step, batch in zip(range(steps), train_loader):
        optimizer.zero_grad()
        model(batch).sum().backward()
        optimizer.step()
