# VAR: the wrapper is chosen by an expression, DDP when distributed (the premise) else a no-op.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class NullDDP(torch.nn.Module):
    def __init__(self, module, *args, **kwargs):
        super().__init__()
        self.module = module


def build(model, device):
    model = torch.compile(model)
    return (DDP if dist.is_initialized() else NullDDP)(model, device_ids=[device])  # expect: compile-before-ddp
