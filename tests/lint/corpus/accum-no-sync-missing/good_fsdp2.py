import torch
from torch.distributed.fsdp import fully_shard


def train(model, micro_batches, accum):
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters())
    for i, mb in enumerate(micro_batches):
        model.set_requires_gradient_sync(i == accum - 1)
        (model(mb).mean() / accum).backward()
    opt.step()
    opt.zero_grad()
