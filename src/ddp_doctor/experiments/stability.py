"""How stable was one run? Four numbers from a run directory, all "lower is better".

Computed from the global per-step loss and gradient norm that the analysis derives from the
ranks' `step` records (analysis.quantities.series: token-weighted over micro-steps and ranks):

* ``loss_std`` — step-to-step loss noise after warmup: std(Δ²L) / √6 over the steps after the lr
  peak (and after at least the first WARMUP_SKIP_FRACTION of the run), with
  Δ²L(t) = L(t+1) − 2L(t) + L(t−1). The second difference removes the downward trend (exactly
  where it is locally linear), so a run that learns faster is not called noisier; for independent
  noise of variance σ², Var(Δ²L) = (1 + 4 + 1)σ² = 6σ².
* ``loss_spikes`` — loss-spike events by the robust trailing-window rule of
  analysis.quantities.spikes (median/MAD, the rule `report` uses).
* ``final_loss`` — mean loss over the last FINAL_FRACTION of the steps (at least one step).
* ``grad_spikes`` — the same spike rule on the global gradient norm √‖g‖².

A run whose loss became NaN/Inf is ``diverged``: its loss metrics are +inf (worst possible), so it
ranks last instead of silently dropping out of the means.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ddp_doctor.analysis.quantities.series import build_series
from ddp_doctor.analysis.quantities.spikes import find_spikes
from ddp_doctor.rundir.reader import read_run

WARMUP_SKIP_FRACTION = 0.1
FINAL_FRACTION = 0.1
METRICS: tuple[str, ...] = ("loss_std", "loss_spikes", "final_loss", "grad_spikes")


@dataclass
class Stability:
    loss_std: float
    loss_spikes: float
    final_loss: float
    grad_spikes: float  # nan when the run recorded no gradient norms
    steps: int
    diverged: bool

    def to_json(self) -> dict[str, float | int | bool]:
        return asdict(self)


def post_warmup_start(lr: np.ndarray) -> int:
    """First step after the lr peak (the end of warmup), and not before 10% of the run."""
    n = lr.shape[0]
    floor = math.ceil(WARMUP_SKIP_FRACTION * n)
    finite = np.isfinite(lr)
    peak = int(np.argmax(np.where(finite, lr, -np.inf))) if finite.any() else 0
    start: int = min(max(peak, floor), max(n - 4, 0))
    return start


def stability_of_series(loss: np.ndarray, grad_norm: np.ndarray, lr: np.ndarray) -> Stability:
    """The four metrics of one run from its per-step global loss, grad norm and lr."""
    n = loss.shape[0]
    if n == 0:
        return Stability(math.nan, math.nan, math.nan, math.nan, 0, False)
    diverged = bool((~np.isfinite(loss)).any())
    if diverged:
        loss_std = final = math.inf
    else:
        tail = loss[post_warmup_start(lr) :]
        loss_std = float(np.std(np.diff(tail, n=2), ddof=1) / math.sqrt(6)) if tail.size >= 4 else math.nan
        final = float(np.mean(loss[-max(1, math.ceil(FINAL_FRACTION * n)) :]))
    grad_spikes = float(len(find_spikes(grad_norm))) if np.isfinite(grad_norm).any() else math.nan
    return Stability(
        loss_std=loss_std,
        loss_spikes=float(len(find_spikes(loss))),
        final_loss=final,
        grad_spikes=grad_spikes,
        steps=n,
        diverged=diverged,
    )


def stability_of_run(run_dir: Path | str) -> Stability:
    """Read a run directory and compute its stability metrics."""
    run = read_run(run_dir, rollups="off")  # stds and spike counts over every step
    series = build_series(run)
    gsq = series.gsq_global
    # FSDP2 records each rank's shard of the global gradient: the squared norms add up over ranks;
    # under DDP every rank holds the same all-reduced gradient, so one rank's value is the norm.
    fsdp = run.config("fsdp") is not None
    sq = np.full(series.n_steps, np.nan)
    have = np.isfinite(gsq).any(axis=0) if gsq.size else np.zeros(series.n_steps, dtype=bool)
    if have.any():
        steps = gsq[:, have]
        sq[have] = np.nansum(steps, axis=0) if fsdp else np.nanmax(steps, axis=0)
    grad_norm = np.sqrt(sq)
    return stability_of_series(series.global_loss, grad_norm, series.lr)
