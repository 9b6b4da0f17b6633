import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, model, loader, optimizer, neptune_run, cfg):
    model = DDP(model.to(rank), device_ids=[rank])
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if cfg.logging and rank == 0:
            neptune_run["train/loss"].log(value=loss.item(), step=step)  # expect: rank0-only-loss-log
