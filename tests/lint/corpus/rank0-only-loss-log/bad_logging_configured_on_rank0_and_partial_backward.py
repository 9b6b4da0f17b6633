# DiT/LlamaGen ``create_logger``: ``logging.basicConfig`` runs on rank 0 only, so the other ranks
# have no handler and drop ``info`` records; the backward runs in a helper bound with
# ``functools.partial`` (lucidrains stylegan2 ``backwards = partial(loss_backwards, fp16)``).
import logging
from functools import partial

import torch.distributed as dist


def create_logger():
    if dist.get_rank() == 0:
        logging.basicConfig(level=logging.INFO)
    return logging.getLogger(__name__)


def loss_backwards(fp16, loss, optimizer):
    if fp16:
        optimizer.backward(loss)
    else:
        loss.backward()


def train(model, loader, optimizer, fp16):
    logger = create_logger()
    backwards = partial(loss_backwards, fp16)
    for x in loader:
        loss = model(x).mean()
        backwards(loss, optimizer)
        optimizer.step()
        logger.info("loss %.4f", loss.item())  # expect: rank0-only-loss-log
