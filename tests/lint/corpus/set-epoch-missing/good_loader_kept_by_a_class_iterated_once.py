# A runner keeps the loader and iterates it once per call of `fit`, which runs once (no epoch loop
# around it): every pass is the first, so the order never repeats.
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build(dataset):
    return DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))


class Runner:
    def __init__(self, loader, model, optimizer):
        self.loader = loader
        self.model = DDP(model)
        self.optimizer = optimizer

    def fit(self):
        for batch in self.loader:
            loss = self.model(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


def main(dataset, model, optimizer):
    runner = Runner(build(dataset), model, optimizer)
    runner.fit()
