# gmflow style: a logger class keeps what it is handed in an attribute (``self.running_loss[k] +=
# metrics[k]``) and another of its methods writes that attribute to TensorBoard every few steps.
# ``push`` logs its ``metrics`` as surely as if it called ``add_scalar`` itself; called on rank 0
# only with the local loss in ``metrics``, it writes rank 0's value.
import torch
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter


class Logger:
    def __init__(self, summary_writer, summary_freq=100):
        self.total_steps = 0
        self.running_loss = {}
        self.summary_writer = summary_writer
        self.summary_freq = summary_freq

    def print_training_status(self, mode="train"):
        for k in self.running_loss:
            self.summary_writer.add_scalar(mode + "/" + k, self.running_loss[k] / self.summary_freq, self.total_steps)
            self.running_loss[k] = 0.0

    def push(self, metrics, mode="train"):
        self.total_steps += 1
        for key in metrics:
            if key not in self.running_loss:
                self.running_loss[key] = 0.0
            self.running_loss[key] += metrics[key]
        if self.total_steps % self.summary_freq == 0:
            self.print_training_status(mode)
            self.running_loss = {}


def train(args, model, loader, optimizer):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    if args.local_rank == 0:
        logger = Logger(SummaryWriter(args.checkpoint_dir), args.summary_freq)
    for img, target in loader:
        loss, metrics = torch.nn.functional.l1_loss(model(img), target), {}
        metrics.update({"total_loss": loss.item()})
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if args.local_rank == 0:
            logger.push(metrics)  # expect: rank0-only-loss-log
