# icefall: the TensorBoard writer exists on rank 0 only (None elsewhere) and is handed to the loss
# tracker's own ``write_summary``: the tracker writes rank 0's local losses.
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter


def train_one_epoch(model, loader, optimizer, compute_loss, tracker_cls, rank):
    tb_writer = SummaryWriter("tb") if rank == 0 else None
    tot_loss = tracker_cls()
    for step, batch in enumerate(loader):
        loss, loss_info = compute_loss(model, batch)
        loss.backward()
        optimizer.step()
        tot_loss = tot_loss + loss_info
        if tb_writer is not None:
            loss_info.write_summary(tb_writer, "train/current_", step)  # expect: rank0-only-loss-log
    dist.barrier()
