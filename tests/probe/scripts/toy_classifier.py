"""Tiny deterministic classifier and data for the DeepSpeed test script (no DeepSpeed, no probe)."""

import torch
from torch import nn
from torch.utils.data import TensorDataset

FEATURES, CLASSES, BATCH, LR = 8, 4, 4, 0.05


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, CLASSES))


def make_dataset(n: int) -> TensorDataset:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, FEATURES, generator=gen)
    noise = (torch.rand(n, generator=gen) < 0.2).long()
    return TensorDataset(x, (x[:, :CLASSES].argmax(dim=1) + noise) % CLASSES)
