# VideoMAE/BEiT style: a TensorBoard writer built on rank 0 only is fed the local loss and then,
# in the same block, the learning rate, the loss scale and the step. Only the loss is rank 0's
# local value: the writer is where values go, not a value, so its other calls are not flagged.
import torch
from torch.utils.tensorboard import SummaryWriter


class TensorboardLogger:
    def __init__(self, log_dir):
        self.writer = SummaryWriter(log_dir)
        self.step = 0

    def set_step(self, step=None):
        self.step = self.step + 1 if step is None else step

    def update(self, head="scalar", **kwargs):
        for k, v in kwargs.items():
            self.writer.add_scalar(head + "/" + k, v, self.step)


def train_one_epoch(model, loader, optimizer, log_writer=None):
    for samples, targets in loader:
        loss = torch.nn.functional.cross_entropy(model(samples), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
        max_lr = max(g["lr"] for g in optimizer.param_groups)
        if log_writer is not None:
            log_writer.update(loss=loss_value, head="loss")  # expect: rank0-only-loss-log
            log_writer.update(lr=max_lr, head="opt")
            log_writer.set_step()


def main(args, model, loader, optimizer):
    torch.distributed.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    log_writer = TensorboardLogger(args.log_dir) if torch.distributed.get_rank() == 0 else None
    train_one_epoch(model, loader, optimizer, log_writer)
