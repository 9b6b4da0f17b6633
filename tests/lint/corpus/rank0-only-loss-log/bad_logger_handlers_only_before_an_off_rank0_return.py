# maskrcnn-benchmark style ``setup_logger``: the other ranks return before any handler is added,
# so their ``logger.info`` records are dropped; the per-iteration loss (this rank's) is logged by
# rank 0 alone. A level chosen through a local (``level = INFO if rank == 0 else WARNING``) silences
# the same way.
import logging
import sys


def setup_logger(name, save_dir, distributed_rank):
    logger = logging.getLogger(name)
    logger.setLevel(logging.DEBUG)
    if distributed_rank > 0:
        return logger
    ch = logging.StreamHandler(stream=sys.stdout)
    ch.setLevel(logging.DEBUG)
    logger.addHandler(ch)
    return logger


def train(model, loader, optimizer, rank):
    logger = setup_logger("train", "out", rank)
    for it, batch in enumerate(loader):
        loss = model(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if it % 20 == 0:
            logger.info(f"iter {it} loss {loss.item():.4f}")  # expect: rank0-only-loss-log
