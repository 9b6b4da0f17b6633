# The checkpoint directory is named after the epoch loss (``os.path.join(dir, "loss-{:.4f}".format(
# loss))``, Amphion): the path rank 0 logs while pruning old checkpoints is a file name, not the loss.
import logging
import os
import shutil

logger = logging.getLogger(__name__)


def train(model, loader, optimizer, ckpt_dir, rank, epochs):
    for epoch in range(epochs):
        total = 0.0
        for batch in loader:
            loss = model(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        if rank == 0:
            path = os.path.join(ckpt_dir, "epoch-{:04d}_loss-{:.6f}".format(epoch, total / len(loader)))
            shutil.rmtree(path, ignore_errors=True)
            logger.debug(f"Remove old checkpoint: {path}")
