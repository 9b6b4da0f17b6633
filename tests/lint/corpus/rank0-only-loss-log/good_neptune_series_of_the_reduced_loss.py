import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, model, loader, optimizer, neptune_run, cfg):
    model = DDP(model.to(rank), device_ids=[rank])
    history = {"train_loss": []}
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        history["train_loss"].append(loss.item())
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        if cfg.logging and rank == 0:
            neptune_run["train/loss"].log(value=reduced.item() / dist.get_world_size(), step=step)
