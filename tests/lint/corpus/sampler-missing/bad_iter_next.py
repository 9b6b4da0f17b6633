from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.dataloader import DataLoader


class Trainer:
    def __init__(self, model, train_set, optimizer):
        self.model = DistributedDataParallel(model)
        self.optimizer = optimizer
        self.loader = DataLoader(train_set, batch_size=4)  # expect: sampler-missing

    def fit(self, steps):
        it = iter(self.loader)
        for _ in range(steps):
            batch = next(it)
            self.model(batch).loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
