# The plain loader is rebound, before the loop, to a new DataLoader over its dataset with a
# DistributedSampler: the training loop draws the sharded loader, not the first one.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def main(model, dataset, optimizer, epochs):
    dist.init_process_group("nccl")
    train_loader = DataLoader(dataset, shuffle=True, batch_size=8)
    train_loader = DataLoader(train_loader.dataset, batch_size=8, sampler=DistributedSampler(dataset))
    model = torch.nn.parallel.DistributedDataParallel(model)
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
        for batch in train_loader:
            optimizer.zero_grad()
            model(batch).sum().backward()
            optimizer.step()
