# ``logging.basicConfig`` on every rank (only its file name depends on the rank): every rank logs
# its own loss, nothing is rank 0's alone.
import logging

import torch.distributed as dist


def train(model, loader, optimizer):
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, filename=f"train_{rank}.log" if rank else "train.log")
    logger = logging.getLogger(__name__)
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        logger.info("loss %.4f", loss.item())
