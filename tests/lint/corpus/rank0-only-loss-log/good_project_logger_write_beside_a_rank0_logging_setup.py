# YouReID style: a ``logging`` setup adds handlers on rank 0 only, but the per-rank loss goes
# through the project's own ``Logger.write``, which appends to a file on every rank: no logging
# record, nothing the setup drops.
import logging


def setup_logger(name, distributed_rank):
    logger = logging.getLogger(name)
    if distributed_rank > 0:
        return logger
    logger.addHandler(logging.StreamHandler())
    return logger


class Logger:
    def __init__(self, path):
        self.file = open(path, "a")

    def write(self, msg):
        self.file.write(msg + "\n")


def train(model, loader, optimizer, rank):
    setup_logger("train", rank)
    logger = Logger(f"log_rank{rank}.txt")
    for it, batch in enumerate(loader):
        loss = model(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logger.write(f"iter {it} loss {loss.item():.4f}")
