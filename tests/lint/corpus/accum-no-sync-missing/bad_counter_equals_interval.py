# The optimizer steps when the batch counter reaches the number of batches per update (torchdrug
# `if batch_id - start_id + 1 == gradient_interval:`): accumulation without `%`, on a DDP model with
# no no_sync, so every micro-batch all-reduces.
import torch.nn as nn


def train(model, optimizer, loader, gradient_interval, device):
    model = nn.parallel.DistributedDataParallel(model, device_ids=[device])
    start_id = 0
    for batch_id, batch in enumerate(loader):
        loss = model(batch) / gradient_interval
        loss.backward()  # expect: accum-no-sync-missing
        if batch_id - start_id + 1 == gradient_interval:
            optimizer.step()
            optimizer.zero_grad()
            start_id = batch_id + 1
