# ``if step % 10 != 0 and dist.get_rank() > 0: return`` is no rank-0 test: on the logging steps
# every rank goes on to log its own value (each rank's line is its own, nothing is hidden).
import torch.distributed as dist


class Trainer:
    def __init__(self, model, optimizer, logger):
        self.model = model
        self.optimizer = optimizer
        self.logger = logger

    def display(self, iteration, loss_info):
        if iteration % 10 != 0 and dist.get_rank() > 0:
            return
        for name in sorted(loss_info):
            self.logger.info(name + " = " + str(loss_info[name]))

    def train(self, loader):
        for iteration, batch in enumerate(loader):
            loss, loss_info = self.model(batch)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.display(iteration, loss_info)
