# The micro-batch loop is in train_step; the optimizer steps in its caller.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_step(model, micro_batches, optimizer):
    for x, y in micro_batches:
        optimizer.zero_grad()  # expect: zero-grad-inside-accum
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # expect: accum-loss-unscaled, accum-no-sync-missing


def train(model, loader, optimizer):
    model = DDP(model)
    for micro_batches in loader:
        train_step(model, micro_batches, optimizer)
        optimizer.step()
