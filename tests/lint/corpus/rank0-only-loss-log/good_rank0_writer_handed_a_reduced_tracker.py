# The tracker is reduced across ranks before it is handed to the rank-0 writer; the writer handed to
# a function with no loss (the learning rate) writes no loss.
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter


def write_lr(writer, lr, step):
    writer.add_scalar("lr", lr, step)


def train_one_epoch(model, loader, optimizer, compute_loss, tracker_cls, rank):
    tb_writer = SummaryWriter("tb") if rank == 0 else None
    for step, batch in enumerate(loader):
        loss, loss_info = compute_loss(model, batch)
        loss.backward()
        optimizer.step()
        dist.all_reduce(loss_info)
        if tb_writer is not None:
            loss_info.write_summary(tb_writer, "train/current_", step)
            write_lr(tb_writer, optimizer.param_groups[0]["lr"], step)
