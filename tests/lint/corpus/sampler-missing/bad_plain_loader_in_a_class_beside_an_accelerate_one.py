import torch
from accelerate import Accelerator
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader


class AcceleratorTrainer:
    def __init__(self, model, optimizer, dataset):
        self.accelerator = Accelerator()
        loader = DataLoader(dataset, batch_size=8, shuffle=True)
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)


class FSDPTrainer:
    def __init__(self, model, dataset, rank):
        torch.cuda.set_device(rank)
        self.model = FSDP(model)
        # prepare() of the other class does not shard this loader
        self.loader = DataLoader(dataset, batch_size=8, shuffle=True)  # expect: sampler-missing

    def fit(self):
        for x in self.loader:
            self.model(x).sum().backward()
