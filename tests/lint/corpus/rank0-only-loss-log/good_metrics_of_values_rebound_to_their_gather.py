import torch
import torch.distributed as dist
import wandb


def all_gather_if_needed(values, world_size):
    if world_size == 1:
        return values
    parts = [torch.empty_like(values) for _ in range(world_size)]
    dist.all_gather(parts, values)
    return torch.cat(parts)


def batch_metrics(model, batch, world_size):
    logps = model(batch)
    losses = -logps
    metrics = {}
    # each value is rebound to its gather over ranks before it goes into the metrics
    logps = all_gather_if_needed(logps.detach(), world_size)
    metrics["logps/train"] = logps.cpu().numpy().tolist()
    all_losses = all_gather_if_needed(losses.detach(), world_size)
    metrics["loss/train"] = all_losses.cpu().numpy().tolist()
    return losses.mean(), metrics


def train(model, loader, optimizer, world_size):
    for batch in loader:
        loss, metrics = batch_metrics(model, batch, world_size)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        means = {k: sum(v) / len(v) for k, v in metrics.items()}
        if dist.get_rank() == 0:
            wandb.log(means)
