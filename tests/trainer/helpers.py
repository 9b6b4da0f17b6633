"""Small configurations and hand-built global batches shared by the trainer tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch.utils.data import default_collate

from ddp_doctor.trainer.config import TrainConfig
from ddp_doctor.trainer.data import dataset_for

# The tiny preset on short sequences with strongly varying document lengths (4..65 tokens).
BASE = TrainConfig(
    preset="tiny",
    steps=4,
    micro_batch=2,
    accum=4,
    seq_len=64,
    lr=1e-3,
    warmup_steps=1,
    doc_min_len=4,
    dataset_docs=64,
    progress=False,
)


def cfg(**changes: Any) -> TrainConfig:
    return replace(BASE, **changes)


def global_micro_batches(c: TrainConfig, world: int) -> list[dict[str, torch.Tensor]]:
    """world * accum micro-batches of micro_batch documents each; rank r owns [r*accum, (r+1)*accum)."""
    data = dataset_for(c)
    n = world * c.accum
    return [default_collate([data[i * c.micro_batch + j] for j in range(c.micro_batch)]) for i in range(n)]


def grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: _full(p.grad).clone() for n, p in model.named_parameters() if p.grad is not None}


def params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: _full(p.detach()).clone() for n, p in model.named_parameters()}


def _full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t  # FSDP2 shards are DTensors


def max_rel_error(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """max over tensors of ||a - b|| / ||b||."""
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).norm() / b[k].norm().clamp_min(1e-30)) for k in a)
