# As the bad snippet, with the sampler's epoch set before each pass.
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


class Solver:
    def __init__(self, dataset, model, optimizer, epochs, rank):
        self.loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=True))
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
            self.loader.sampler.set_epoch(epoch)
            self.train(epoch)
