import torch
from torch.distributed.fsdp import fully_shard


def train(model, loader, optimizer):
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    for batch in loader:
        model(batch).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
