# The epoch mean is read out of the tensor before the all-reduce combines it: the returned value,
# logged on rank 0, is rank 0's own mean.
import torch
import torch.distributed as dist


def train_epoch(model, loader, optimizer, world_size, device):
    total = 0.0
    for batch in loader:
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    avg_loss = total / len(loader)
    avg_tensor = torch.tensor(avg_loss, device=device)
    avg_loss = (avg_tensor / world_size).item() * world_size
    dist.all_reduce(avg_tensor)
    return avg_loss


def fit(model, loader, optimizer, rank, world_size, device, logger):
    for epoch in range(10):
        train_loss = train_epoch(model, loader, optimizer, world_size, device)
        if rank == 0:
            logger.info(f"epoch {epoch} train loss {train_loss:.4f}")  # expect: rank0-only-loss-log
