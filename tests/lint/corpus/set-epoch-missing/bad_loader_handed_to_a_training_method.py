from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def fit(self, train_set, epochs):
        sampler = DistributedSampler(train_set)  # expect: set-epoch-missing
        train_loader = DataLoader(train_set, batch_size=8, sampler=sampler)
        for epoch in range(epochs):
            self.run_epoch(train_loader)

    def run_epoch(self, loader):
        for x, y in loader:
            loss = self.model(x, y)
            loss.backward()
            self.optimizer.step()
