# The logging setup silences ``logger`` off rank 0, but ``log_writer`` is a TensorBoard writer of
# each rank's own directory: ``add_scalar`` is not a logging record, every rank writes its own.
import logging

from torch.utils.tensorboard import SummaryWriter


def train(model, loader, optimizer, rank):
    logger = logging.getLogger(__name__)
    if rank != 0:
        logger.setLevel(logging.WARNING)
    log_writer = SummaryWriter(f"runs/rank{rank}")
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        log_writer.add_scalar("loss", loss.item(), step)
