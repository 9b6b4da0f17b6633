# The same trainer class calls `set_epoch` on its loader's sampler; and a second trainer whose
# `fit` method is called once (not from an epoch loop) iterates its loader a single time.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset))


class Trainer:
    def __init__(self, data_loaders, model, optimizer):
        self.train_loader = data_loaders
        self.model = DDP(model)
        self.optimizer = optimizer

    def train_epoch(self, epoch):
        self.train_loader.sampler.set_epoch(epoch)
        for batch in self.train_loader:
            loss = self.model(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


def main(dataset, model, optimizer, epochs):
    trainer = Trainer(prepare_dataloader(dataset, 8), model, optimizer)
    for epoch in range(epochs):
        trainer.train_epoch(epoch)
