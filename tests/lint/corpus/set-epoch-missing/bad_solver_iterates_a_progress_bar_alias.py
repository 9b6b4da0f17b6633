# A solver class keeps its loader; its `train(epoch)` binds `pbar` to a tqdm bar over it on rank 0
# and to the loader itself elsewhere (tqdm's __iter__ iterates the loader again), and `run` calls
# `train(epoch)` once per epoch. `self.model.train()` is nn.Module.train, not a call of that method.
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


class Solver:
    def __init__(self, dataset, model, optimizer, epochs, rank):
        self.loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=True))  # expect: set-epoch-missing
        self.model = DDP(model)
        self.optimizer = optimizer
        self.epochs = epochs
        self.rank = rank

    def train(self, epoch):
        self.model.train()
        if self.rank == 0:
            pbar = tqdm(self.loader)
        else:
            pbar = self.loader
        for x in pbar:
            self.optimizer.zero_grad()
            self.model(x).mean().backward()
            self.optimizer.step()

    def run(self):
        for epoch in range(self.epochs):
            self.train(epoch)
