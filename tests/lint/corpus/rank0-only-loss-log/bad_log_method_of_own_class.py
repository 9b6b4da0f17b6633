import torch
from torch.utils.tensorboard import SummaryWriter


class Trainer:
    def __init__(self, model, loader, optimizer, rank):
        self.model = torch.nn.parallel.DistributedDataParallel(model)
        self.loader, self.optimizer, self.rank = loader, optimizer, rank
        self.writer = SummaryWriter() if rank == 0 else None

    @property
    def is_main(self):
        return self.rank == 0

    def log(self, values, step):
        for k, v in values.items():
            self.writer.add_scalar(k, v, global_step=step)

    def train(self):
        for step, batch in enumerate(self.loader):
            loss = self.model(batch).mean()
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            if self.is_main:
                self.log({"train/loss": loss.item()}, step=step)  # expect: rank0-only-loss-log
