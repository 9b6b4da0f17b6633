# BiRefNet `train.py` style: a helper returns the loader over a DistributedSampler, a second helper
# returns it again, a trainer class keeps it on `self`, and its `train_epoch` is called once per epoch.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def prepare_dataloader(dataset, batch_size, distributed):
    if distributed:
        return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset))  # expect: set-epoch-missing
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)


def init_data_loaders(dataset, distributed):
    train_loader = prepare_dataloader(dataset, 8, distributed)
    return train_loader


class Trainer:
    def __init__(self, data_loaders, model, optimizer):
        self.train_loader = data_loaders
        self.model = DDP(model)
        self.optimizer = optimizer

    def train_epoch(self, epoch):
        for batch in self.train_loader:
            loss = self.model(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


def main(dataset, model, optimizer, epochs):
    trainer = Trainer(data_loaders=init_data_loaders(dataset, True), model=model, optimizer=optimizer)
    for epoch in range(epochs):
        trainer.train_epoch(epoch)
