import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Engine:
    def __init__(self, model, optimizer, accumulation_steps):
        self.model = DDP(model)
        self.optimizer = optimizer
        self.accumulation_steps = accumulation_steps

    def train_step(self, micro_batches):
        for mb in micro_batches:
            (self.model(mb).loss / self.accumulation_steps).backward()  # expect: accum-no-sync-missing
        self.optimizer.step()
        self.optimizer.zero_grad()
        dist.barrier()
