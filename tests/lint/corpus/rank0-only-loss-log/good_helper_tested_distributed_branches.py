import torch
import torch.distributed as dist
import wandb


def is_dist():
    return dist.is_available() and dist.is_initialized()


def is_master():
    return dist.get_rank() == 0 if is_dist() else True


def dist_mean_scalar(x):
    if not is_dist():
        return float(x)
    t = torch.tensor(x)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    t /= dist.get_world_size()
    return t.item()


def train(model, loader, optimizer):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        batch_loss = loss.item()
        # the single-process branch keeps the raw value: there, one process holds the global value
        if is_dist():
            batch_loss_gathered = dist_mean_scalar(batch_loss)
        else:
            batch_loss_gathered = batch_loss
        if is_master():
            wandb.log({"batch_loss": batch_loss_gathered})
