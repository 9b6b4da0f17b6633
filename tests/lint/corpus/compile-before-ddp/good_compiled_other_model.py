import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, loss_fn):
    loss_fn = torch.compile(loss_fn)
    ddp = DDP(model)
    return ddp, loss_fn
