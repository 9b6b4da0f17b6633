# MACE style: one branch's step helper returns this rank's loss in its metrics dict (logged: flagged),
# the other branch's helper all-reduces the loss first; items that do not read the loss (`mode`,
# `epoch`) added afterwards leave the container with the reduced value.
import torch
import torch.distributed as dist


def take_step(model, batch, optimizer):
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    return loss, {"loss": loss.item()}


def take_step_reduced(model, loader, optimizer):
    def closure():
        total = torch.tensor(0.0)
        for batch in loader:
            part = model(batch).mean()
            part.backward()
            total += part
        dist.all_reduce(total)
        return total

    loss = optimizer.step(closure)
    return loss, {"loss": loss.item()}


def train_one_epoch(model, loader, optimizer, full_batch, logger, rank, epoch):
    model = torch.nn.parallel.DistributedDataParallel(model)
    if full_batch:
        _, metrics = take_step_reduced(model, loader, optimizer)
        metrics["mode"] = "opt"
        metrics["epoch"] = epoch
        if rank == 0:
            logger.log(metrics)
    else:
        for batch in loader:
            _, metrics = take_step(model, batch, optimizer)
            metrics["mode"] = "opt"
            if rank == 0:
                logger.log(metrics)  # expect: rank0-only-loss-log
