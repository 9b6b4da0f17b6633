# A step method that steps on every call is no accumulation; one whose caller skips the sync around
# the non-final micro-steps controls it (the file names ``no_sync``).
import contextlib

from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optimizer):
        self.model = DDP(model)
        self.optimizer = optimizer

    def train_step(self, batch):
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()


class AccumTrainer:
    def __init__(self, model, optimizer, accum):
        self.model = DDP(model)
        self.optimizer = optimizer
        self.accum = accum

    def micro_step(self, batch, i):
        loss = self.model(batch).mean() / self.accum
        loss.backward()
        if (i + 1) % self.accum == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def fit(self, loader):
        for i, batch in enumerate(loader):
            last = (i + 1) % self.accum == 0
            with contextlib.nullcontext() if last else self.model.no_sync():
                self.micro_step(batch, i)
