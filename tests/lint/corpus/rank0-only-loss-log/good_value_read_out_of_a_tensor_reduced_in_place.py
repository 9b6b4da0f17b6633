# FengWu / TimesFM style: the loss is copied into a tensor, all-reduced in place, and read back
# divided by the world size; the rank-0 log and the returned epoch mean are the global values.
import torch
import torch.distributed as dist


def train_epoch(model, loader, optimizer, world_size, distributed, device):
    total = 0.0
    for batch in loader:
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    avg_loss = total / len(loader)
    if distributed:
        avg_tensor = torch.tensor(avg_loss, device=device)
        dist.all_reduce(avg_tensor)
        avg_loss = (avg_tensor / world_size).item()
    return avg_loss


def fit(model, loader, optimizer, rank, world_size, distributed, device, logger):
    for epoch in range(10):
        train_loss = train_epoch(model, loader, optimizer, world_size, distributed, device)
        if rank == 0:
            logger.info(f"epoch {epoch} train loss {train_loss:.4f}")


def train_steps(model, loader, optimizer, rank, world_size, logger):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        loss_tensor = loss.detach()
        dist.all_reduce(loss_tensor)
        loss = loss_tensor.item() / world_size
        if rank == 0:
            logger.info(f"step {step} loss {loss:.4f}")
