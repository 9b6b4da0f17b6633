import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def train(model, loader, optimizer, clip):
    model = FSDP(model)
    for batch in loader:
        model(batch).sum().backward()
        # a branch on the clip setting, not on the engine: the other branch never clips with FSDP's method
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)  # expect: fsdp-clip-wrong
        else:
            model.zero_grad(set_to_none=False)
        optimizer.step()
        optimizer.zero_grad()
