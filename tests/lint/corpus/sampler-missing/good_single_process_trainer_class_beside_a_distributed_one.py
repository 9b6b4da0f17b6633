import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader, DistributedSampler


class Trainer:
    """The single-GPU trainer: no wrap, no rank."""

    def __init__(self, model, dataset):
        self.model = model
        self.loader = DataLoader(dataset, batch_size=8, shuffle=True)

    def fit(self):
        for x in self.loader:
            self.model(x).sum().backward()


class FSDPTrainer:
    def __init__(self, model, dataset, rank, world_size):
        self.model = FSDP(model)
        sampler = DistributedSampler(dataset, rank=rank, num_replicas=world_size)
        self.loader = DataLoader(dataset, batch_size=8, sampler=sampler)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.loader.sampler.set_epoch(epoch)
            for x in self.loader:
                self.model(x).sum().backward()
