# A scalar logger of the file writes whatever it is handed on rank 0 only, and the training code
# hands it the learning rate, the memory use and the loss: the event is the call that hands it the
# loss (AVT's ``_store_scalar_logs(name, val, ...)`` whose writer is None off the main process,
# NanoDet's ``self.scalar_summary(tag, phase, value, step)`` under ``local_rank < 1``).
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter() if dist.get_rank() == 0 else None


def store_scalar(name, val, step):
    if writer is None:
        return
    writer.add_scalar(name, val, step)


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss, parts = model(batch)
        loss.backward()
        optimizer.step()
        for key, value in parts.items():
            store_scalar(f"train/{key}", value, step)  # expect: rank0-only-loss-log
        store_scalar("train/loss", loss, step)
        store_scalar("train/lr", optimizer.param_groups[0]["lr"], step)


class Task:
    def __init__(self, local_rank, logger):
        self.local_rank = local_rank
        self.logger = logger

    def training_step(self, batch, step):
        loss = self.model(batch)
        loss.backward()
        self.scalar_summary("train/lr", "Train", self.lr, step)
        self.scalar_summary("train/loss", "Train", loss.item(), step)  # expect: rank0-only-loss-log
        return loss

    def scalar_summary(self, tag, phase, value, step):
        if self.local_rank < 1:
            self.logger.add_scalars(tag, {phase: value}, step)
