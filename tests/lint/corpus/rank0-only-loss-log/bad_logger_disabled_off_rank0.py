# ``logger.disabled = True`` on every process but the main one (SwinBERT): the plain
# ``logger.info`` of the running loss meter prints rank 0's meter only.
import logging

import torch.distributed as dist

logger = logging.getLogger(__name__)


def is_main_process():
    return dist.get_rank() == 0


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value):
        self.sum += value
        self.count += 1


def train(model, loader, optimizer):
    if not is_main_process():
        logger.disabled = True
    meter = AverageMeter()
    for step, batch in enumerate(loader):
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(loss.item())
        if step % 100 == 0:
            logger.info("step %d loss %.4f", step, meter.sum / meter.count)  # expect: rank0-only-loss-log
