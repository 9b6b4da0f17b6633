import torch
from torch.utils.tensorboard import SummaryWriter


def train_one_epoch(model, optimizer, loader, epoch, metric_logger, rank):
    model = torch.nn.parallel.DistributedDataParallel(model)
    writer = SummaryWriter() if rank == 0 else None
    for i, batch in enumerate(metric_logger.log_every(loader, 10, "train")):
        step = epoch * len(loader) + i
        loss = model(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metric_logger.update(loss=loss.item())
        if writer is not None:
            writer.add_scalar("train/loss", metric_logger.loss.value, step)  # expect: rank0-only-loss-log
