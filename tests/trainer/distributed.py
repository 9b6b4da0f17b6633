"""Run a function on W real gloo ranks (forked processes, a free port) and collect what each returns."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import teardown_race
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ddp_doctor.trainer.launch import free_port

# Generous: a hung collective fails the test instead of hanging CI.
TIMEOUT_S = 240


def _entry(rank: int, fn: Callable[..., Any], world: int, port: int, out: str, args: tuple) -> None:
    # One intra-op thread per rank: the test machine has 2 cores, and forked ranks must not use the
    # parent's OpenMP pool.
    torch.set_num_threads(1)
    from datetime import timedelta

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=TIMEOUT_S),
    )
    try:
        torch.save(fn(*args), Path(out) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def run_ranks(fn: Callable[..., Any], world: int, *args: Any) -> list[Any]:
    """fn(*args) on every rank of a fresh gloo group; returns [result of rank 0, rank 1, ...]."""
    with tempfile.TemporaryDirectory() as out:
        # fork: the parent has already imported torch and transformers, so ranks start in ~1 s.
        teardown_race.spawn_tolerating(
            lambda: mp.start_processes(
                _entry, args=(fn, world, free_port(), out, args), nprocs=world, join=True, start_method="fork"
            ),
            lambda: all((Path(out) / f"rank{r}.pt").exists() for r in range(world)),
            f"run_ranks {getattr(fn, '__name__', fn)}",
        )
        return [torch.load(Path(out) / f"rank{r}.pt", weights_only=False) for r in range(world)]
