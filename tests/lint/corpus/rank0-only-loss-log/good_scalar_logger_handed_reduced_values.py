# A scalar logger of the file that writes on rank 0 only, handed the learning rate and the loss
# averaged over the ranks: nothing it logs is rank-local.
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter() if dist.get_rank() == 0 else None


def store_scalar(name, val, step):
    if writer is None:
        return
    writer.add_scalar(name, val, step)


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        store_scalar("train/loss", loss, step)
        store_scalar("train/lr", optimizer.param_groups[0]["lr"], step)
