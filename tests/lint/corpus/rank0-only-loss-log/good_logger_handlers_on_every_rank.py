# detectron2's ``setup_logger``: the console handler is rank 0's, but every rank also gets a log
# file of its own, so each rank's loss is logged somewhere (not a rank-0-only log).
import logging
import sys

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_logger(name, distributed_rank, output):
    logger = logging.getLogger(name)
    logger.setLevel(logging.DEBUG)
    if distributed_rank == 0:
        logger.addHandler(logging.StreamHandler(stream=sys.stdout))
    filename = output if distributed_rank == 0 else f"{output}.rank{distributed_rank}"
    logger.addHandler(logging.FileHandler(filename))
    return logger


def train(model, loader, optimizer):
    logger = setup_logger("train", dist.get_rank(), "log.txt")
    model = DDP(model)
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        logger.info("loss %.4f", loss.item())
