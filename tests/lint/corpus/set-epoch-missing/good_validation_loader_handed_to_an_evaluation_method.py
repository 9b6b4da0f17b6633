from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def fit(self, train_set, val_set, epochs):
        train_loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set, shuffle=False))
        val_loader = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set))
        for epoch in range(epochs):
            for x, y in train_loader:
                loss = self.model(x, y)
                loss.backward()
                self.optimizer.step()
            # the order a pass that trains nothing draws never reaches the weights
            self.val(val_loader)

    def val(self, loader):
        self.model.eval()
        total = 0.0
        for x, y in loader:
            total += self.model(x, y).item()
        return total
