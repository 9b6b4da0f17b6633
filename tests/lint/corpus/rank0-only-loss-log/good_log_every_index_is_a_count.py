import torch
from torch.utils.tensorboard import SummaryWriter


def store_scalar(name, value, step, writer):
    if writer is None:
        return
    writer.add_scalar(name, value, step)


def train_one_epoch(model, optimizer, loader, epoch, metric_logger, rank):
    model = torch.nn.parallel.DistributedDataParallel(model)
    writer = SummaryWriter() if rank == 0 else None
    # ``log_every`` yields the loader's batches and ``i`` counts them: neither is the meter's loss
    for i, batch in enumerate(metric_logger.log_every(loader, 10, "train")):
        step = epoch * len(loader) + i
        loss = model(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metric_logger.update(loss=loss.item())
        if writer is not None:
            writer.add_scalar("train/lr", optimizer.param_groups[0]["lr"], step)
        store_scalar("train/lr", optimizer.param_groups[0]["lr"], step, writer)
