import torch.distributed as dist
import wandb


def is_dist():
    return dist.is_available() and dist.is_initialized()


def is_master():
    return dist.get_rank() == 0 if is_dist() else True


def train(model, loader, optimizer):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        batch_loss = loss.item()
        # the distributed branch keeps the local value too: rank 0's own batch is what is logged
        if is_dist():
            shown = batch_loss * 1.0
        else:
            shown = batch_loss
        if is_master():
            wandb.log({"batch_loss": shown})  # expect: rank0-only-loss-log
