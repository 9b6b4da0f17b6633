"""Direct computation of what a DDP run of the toy scripts must record, in one process.

For each optimizer step and rank: the micro-step losses, the squared norm of the LOCAL gradient
accumulated over that rank's micro-batches, and of the GLOBAL (rank-averaged) gradient the
optimizer then applies. No torch.distributed: each rank's shard comes from DistributedSampler
with explicit num_replicas/rank, exactly as the script's sampler draws it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.utils.data import DistributedSampler

from probe.helpers import SCRIPTS

sys.path.insert(0, str(SCRIPTS))
import toy  # noqa: E402


@dataclass
class Step:
    lr: float
    losses: list[list[float]] = field(default_factory=list)  # [rank][micro]
    local_sq: list[float] = field(default_factory=list)  # [rank]
    global_sq: float = 0.0
    skipped: bool = False


def shard_batches(world: int, rank: int, epoch: int) -> list[list[int]]:
    sampler = DistributedSampler(toy.make_dataset(), num_replicas=world, rank=rank, shuffle=True, seed=0)
    sampler.set_epoch(epoch)
    indices = list(sampler)
    return [indices[i : i + toy.BATCH] for i in range(0, len(indices), toy.BATCH)]


def replay(
    world: int,
    make_optimizer: Callable,
    make_scheduler: Callable | None = None,
    max_norm: float | None = None,
    skip_steps: tuple[int, ...] = (),
) -> list[Step]:
    model = toy.make_model()
    dataset = toy.make_dataset()
    optimizer = make_optimizer(model.parameters())
    scheduler = make_scheduler(optimizer) if make_scheduler else None
    params = list(model.parameters())
    steps: list[Step] = []
    for epoch in range(toy.EPOCHS):
        batches = [shard_batches(world, r, epoch) for r in range(world)]
        for s in range(len(batches[0]) // toy.ACCUM):
            step = Step(lr=optimizer.param_groups[0]["lr"], skipped=len(steps) in skip_steps)
            grads = []
            for r in range(world):
                model.zero_grad(set_to_none=True)
                losses = []
                for m in range(toy.ACCUM):
                    x, y = dataset[batches[r][s * toy.ACCUM + m]]
                    loss = F.mse_loss(model(x), y) / toy.ACCUM
                    loss.backward()
                    losses.append(loss.item())
                step.losses.append(losses)
                grads.append([p.grad.clone() for p in params])
                step.local_sq.append(sum(g.double().pow(2).sum().item() for g in grads[-1]))
            averaged = [sum(g[i] for g in grads) / world for i in range(len(params))]
            step.global_sq = sum(g.double().pow(2).sum().item() for g in averaged)
            if not step.skipped:
                for p, g in zip(params, averaged):
                    p.grad = g
                if max_norm is not None:
                    torch.nn.utils.clip_grad_norm_(params, max_norm)
                optimizer.step()
            if scheduler is not None:
                scheduler.step()
            steps.append(step)
    return steps
