"""Tiny deterministic model and data shared by the probe's test training scripts (no probe code)."""

import torch
from torch import nn
from torch.utils.data import TensorDataset

SEED = 0
FEATURES = 8
N_SAMPLES = 32
BATCH = 4
ACCUM = 2
EPOCHS = 2
LR = 0.1


def make_model() -> nn.Module:
    torch.manual_seed(SEED)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, 1))


def make_dataset() -> TensorDataset:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(N_SAMPLES, FEATURES, generator=gen)
    y = x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(N_SAMPLES, 1, generator=gen)
    return TensorDataset(x, y)


def save_params(model: nn.Module, path: str) -> None:
    torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, path)
