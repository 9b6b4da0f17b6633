# A display method that returns at once on every rank but 0 of a distributed run
# (``if self.distributed and dist.get_rank() > 0: return``): what follows runs on rank 0 only.
import torch.distributed as dist


class Trainer:
    def __init__(self, model, optimizer, logger, distributed):
        self.model = model
        self.optimizer = optimizer
        self.logger = logger
        self.distributed = distributed

    def display(self, iteration, loss_info):
        if self.distributed and dist.get_rank() > 0:
            return
        for name in sorted(loss_info):
            self.logger.info(name + " = " + str(loss_info[name]))  # expect: rank0-only-loss-log

    def train(self, loader):
        for iteration, batch in enumerate(loader):
            loss, loss_info = self.model(batch)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.display(iteration, loss_info)
