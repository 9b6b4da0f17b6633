import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def train(model, loader, optimizer):
    model = FSDP(model)
    for batch in loader:
        model(batch).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: fsdp-clip-wrong
        optimizer.step()
        optimizer.zero_grad()
