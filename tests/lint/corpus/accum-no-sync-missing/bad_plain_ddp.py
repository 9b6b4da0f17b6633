import torch
from torch.nn.parallel import DistributedDataParallel


def train(model, batches, accum, rank):
    model = DistributedDataParallel(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters())
    for step in range(100):
        for micro in range(accum):
            loss = model(batches[micro]).mean() / accum
            loss.backward()  # expect: accum-no-sync-missing
        optimizer.step()
        optimizer.zero_grad()
