"""Spikes in a series (loss, gradient norm) by a robust trailing-window rule, and their lag.

A step t is a spike when, against the :data:`WINDOW` values before it (baseline refreshed every
:data:`STRIDE` steps),

    z(t) = (x(t) − median) / (1.4826 · MAD) > SPIKE_Z     and     (x(t) − median) / |median| > MIN_REL_RISE

Rules in the field, for comparison (docs/report.md):
* MosaicML llm-foundry `KillLossSpike` callback: loss > 2 × the running mean of a 100-step window,
  for `patience` = 4 consecutive steps;
* Megatron-based trainers' `SpikyLossDetector`: a relative rise of more than 0.2 over the
  previous step's loss;
* OLMo 2 (Team OLMo 2024) counts spikes as values more than 7 standard deviations above a rolling
  mean.
The median/MAD form is the robust version of the OLMo rule: earlier spikes do not inflate the
spread. The relative-rise floor keeps a nearly constant series (MAD → 0) from flagging noise; a
baseline of exactly 0 (a loss of 0 throughout) has no relative rise, so nothing on it is a spike.
Before MIN_HISTORY values exist the robust rule cannot judge; there a *loss* step is a spike when
it exceeds :data:`EARLY_LOSS_FACTOR` × the mean of the steps before it — the llm-foundry rule
(a 2× jump right after initialization is divergence, not noise: the reference trainer's
lr-too-high fault goes 5.7 → 15.4 nats at step 5); it presumes a positive loss, so it is not
applied where the mean before is ≤ 0. Where the loss's own noise is measured (σ_pred(t) of the
noise band, from the micro-batch losses), an early spike must also rise more than SPIKE_Z × the
median σ_pred of the steps up to it above that mean: a short first window (Lightning's first steps) is not divergence when the jump is
within the run's own noise.
Consecutive spike steps form one event. A loss spike "follows" a gradient-norm spike when it
starts within :data:`MAX_LAG` steps after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.core.catalog import limit

WINDOW = int(limit("loss-spike", "window"))
STRIDE = 5  # baseline recomputed every STRIDE steps (see robust_z)
SPIKE_Z = limit("loss-spike", "z")
MIN_REL_RISE = limit("loss-spike", "rise")
MIN_HISTORY = int(
    limit("loss-spike", "min_history")
)  # finite values in the window before a step can be judged
MAX_LAG = int(limit("grad-spike", "max_lag"))
MAD_TO_STD = 1.4826
EARLY_LOSS_FACTOR = limit(
    "loss-spike", "early_factor"
)  # MosaicML llm-foundry KillLossSpike: loss > 2 x the running mean


@dataclass
class Spike:
    step: int  # first step of the event
    length: int
    peak: float
    baseline: float  # trailing median
    z: float

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "length": self.length,
            "peak": round(self.peak, 6),
            "baseline": round(self.baseline, 6),
            "z": round(self.z, 1) if np.isfinite(self.z) else None,
        }  # None: early rule


def window_median(view: np.ndarray) -> np.ndarray:
    """Row medians ignoring nan. Rows without nan (nearly all of them) take one np.partition at the
    middle (the value np.median returns, without its nan check and mean: ~4x faster), rows with
    nan np.nanmedian (~20x slower)."""
    out = np.empty(view.shape[0])
    has_nan = np.isnan(view).any(axis=1)
    clean = view if not has_nan.any() else view[~has_nan]
    if clean.shape[0] and view.shape[1]:
        k = view.shape[1] // 2
        if view.shape[1] % 2:
            med = np.partition(clean, k, axis=1)[:, k]
        else:  # np.median: the mean of the two middle values, (a + b) / 2
            part = np.partition(clean, (k - 1, k), axis=1)
            with np.errstate(invalid="ignore", over="ignore"):
                med = (part[:, k - 1] + part[:, k]) / 2
        out[~has_nan] = med
    if has_nan.any():
        out[has_nan] = _nan_row_median(view[has_nan])
    return out


def _nan_row_median(rows: np.ndarray) -> np.ndarray:
    """np.nanmedian(rows, axis=1) for short rows, by the same sort-and-index rule (numpy's
    masked-array median: the mean (a + b) / 2 of the middle values, a = b for an odd count; nan for
    a row of nan), without importing numpy.ma (30-60 ms) or warning on an all-nan row (a gap)."""
    srt = np.sort(rows, axis=1)  # nan last
    count = rows.shape[1] - np.isnan(rows).sum(axis=1)
    high = count // 2
    low = np.where(count % 2 == 1, high, high - 1)
    at = np.arange(rows.shape[0])
    last = max(rows.shape[1] - 1, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        med: np.ndarray = (srt[at, np.clip(low, 0, last)] + srt[at, np.clip(high, 0, last)]) / 2
    med[count == 0] = np.nan
    return med


def robust_z(x: np.ndarray, window: int = WINDOW) -> tuple[np.ndarray, np.ndarray]:
    """Trailing-window median and robust z of each value (nan until MIN_HISTORY values exist).

    The baseline (median, MAD) is recomputed every :data:`STRIDE` steps from the `window` values
    before that step and held for the next STRIDE steps: it moves slowly, and this makes the rule
    STRIDE times cheaper on 10^5-step runs. A step is never part of its own baseline."""
    if x.size == 0:  # a run polled before its first step
        return np.zeros(0), np.zeros(0)
    pad = np.concatenate((np.full(window, np.nan), x))
    full = np.lib.stride_tricks.sliding_window_view(pad[:-1], window)  # row t: the values before t
    med, mad, enough = (np.empty(x.size), np.empty(x.size), np.empty(x.size, dtype=bool))
    # the first `window` steps exactly (the history is still filling up), then every STRIDE steps
    for lo, hi, stride in ((0, min(window, x.size), 1), (min(window, x.size), x.size, STRIDE)):
        if hi <= lo:
            continue
        view = full[lo:hi:stride]
        m = window_median(view)
        n = hi - lo
        med[lo:hi] = np.repeat(m, stride)[:n]
        mad[lo:hi] = np.repeat(window_median(np.abs(view - m[:, None])), stride)[:n]
        enough[lo:hi] = np.repeat(np.isfinite(view).sum(axis=1) >= MIN_HISTORY, stride)[:n]
    floor = 1e-12 + 1e-6 * np.abs(med)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (x - med) / (MAD_TO_STD * np.maximum(mad, floor))
    z[~enough] = np.nan
    return med, z


def find_spikes(
    x: np.ndarray,
    z_min: float = SPIKE_Z,
    rel_min: float = MIN_REL_RISE,
    early_factor: float | None = None,
    sigma: np.ndarray | None = None,
) -> list[Spike]:
    """Spike events of `x`; with `early_factor`, steps the robust rule cannot judge yet (too little
    history) are spikes above early_factor × the mean of the finite values before them — and, where
    `sigma` (the predicted std of x(t)) is measured, more than z_min × its median up to t above it."""
    med, z = robust_z(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        # the rise relative to the baseline's magnitude: a negative loss (a log-likelihood, -0.0)
        # rises towards 0; a baseline of exactly 0 has no relative rise at all
        rise = np.where(med != 0, (x - med) / np.abs(med), np.nan)
        flag = (z > z_min) & (rise > rel_min) & np.isfinite(x)
        if early_factor is not None:
            finite = np.isfinite(x)
            count = np.cumsum(finite) - finite  # finite values before t
            mean_before = (np.cumsum(np.where(finite, x, 0.0)) - np.where(finite, x, 0.0)) / count
            # "× the mean before" presumes a positive loss scale (cross-entropy and the like)
            early = (
                ~np.isfinite(z) & finite & (count >= 1) & (mean_before > 0) & (x > early_factor * mean_before)
            )
            if sigma is not None and len(sigma) == len(x):
                # σ_pred of one step rests on few micro-batches: judge against the median of the
                # measured σ_pred up to t (only the few early candidates are visited)
                for t in np.flatnonzero(early):
                    seen = sigma[: t + 1]
                    seen = seen[np.isfinite(seen) & (seen > 0)]
                    if len(seen) and x[t] - mean_before[t] <= z_min * float(np.median(seen)):
                        early[t] = False
            med = np.where(early, mean_before, med)
            flag |= early
    events: list[Spike] = []
    idx = np.flatnonzero(flag)
    for t in idx:
        if events and t == events[-1].step + events[-1].length:
            e = events[-1]
            e.length += 1
            e.peak = max(e.peak, float(x[t]))
            e.z = max(e.z, float(z[t]))
        else:
            events.append(Spike(int(t), 1, float(x[t]), float(med[t]), float(z[t])))
    return events


def lags(grad_spikes: list[Spike], loss_spikes: list[Spike], max_lag: int = MAX_LAG) -> list[dict[str, Any]]:
    """For each gradient spike, the first loss spike starting 0..max_lag steps later (or None)."""
    out = []
    for g in grad_spikes:
        follow = [s for s in loss_spikes if 0 <= s.step - g.step <= max_lag]
        out.append(
            {
                "grad_step": g.step,
                "loss_step": follow[0].step if follow else None,
                "lag": follow[0].step - g.step if follow else None,
            }
        )
    return out
