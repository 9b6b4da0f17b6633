# ColBERT: `config.rank < 1` is the rank-0 test (rank is -1 when not distributed), so the loss
# printed under it (also its running average) is rank 0's local value.
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def train(config, model, batches, optimizer):
    model = DistributedDataParallel(model)
    train_loss = 0.0
    for batch_idx, (x, y) in enumerate(batches):
        loss = nn.CrossEntropyLoss()(model(x), y)
        if config.rank < 1:
            print("loss", loss.item())  # expect: rank0-only-loss-log
        loss.backward()
        train_loss = 0.999 * train_loss + 0.001 * loss.item()
        optimizer.step()
        optimizer.zero_grad()
        if config.rank < 1:
            print(batch_idx, train_loss)  # expect: rank0-only-loss-log
