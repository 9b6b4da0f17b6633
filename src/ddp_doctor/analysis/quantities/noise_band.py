"""The loss noise band: how much the global loss should move from step to step by minibatch noise.

Each micro-batch loss m_j is a mean over k_j units (valid tokens where recorded, else samples), so
with a per-unit variance σ² (McCandlish et al. 2018 §2; any textbook sampling argument):

    Var(m_j) = σ² / k_j        ⇒  σ̂²(t) = Σ_j k_j (m_j − L(t))² / (M − 1)

over the M = ranks × micro-steps micro-batches of step t, and the global loss, a k-weighted mean
over K(t) = Σ_j k_j units, has the predicted step-to-step standard deviation

    σ_pred(t) = sqrt( σ̂²(t) / K(t) ).

The observed fluctuation is the robust standard deviation (1.4826 × MAD) of the global loss minus
its centred rolling median over :data:`TREND_WINDOW` steps (steps with a full window only), so the
slow training trend and rare spikes do not count. ``observed / predicted ≤`` :data:`WITHIN_NOISE_RATIO` means the oscillation
is minibatch noise. The same residual on rank 0's local loss gives how much noisier a rank-0-only
log looks (≈ sqrt(world size) expected). Amplitude trend: the residual std of the last third over
the first third of the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.quantities.series import Series
from ddp_doctor.analysis.quantities.spikes import window_median
from ddp_doctor.core.catalog import limit
from ddp_doctor.rundir.reader import RunData

TREND_WINDOW = 21  # steps; odd, centred
MAD_TO_STD = 1.4826  # std of a normal = 1.4826 × MAD
# Observed/predicted ratio up to which the fluctuation counts as minibatch noise. Sampling error of
# both stds over ≥ 63 steps is ~10-20 %, and the rolling-median residual adds ~4 %; 1.5 leaves room
# for that and for mild non-stationarity (documented in docs/report.md).
WITHIN_NOISE_RATIO = limit("oscillation-within-noise", "ratio")
# Three trend windows: on shorter runs the rolling median cannot follow a fast-falling loss and the
# residual overstates the noise.
MIN_STEPS = 3 * TREND_WINDOW


@dataclass
class NoiseBand:
    observed_std: float | None
    predicted_std: float | None
    ratio: float | None
    rank0_std: float | None
    rank0_over_global: float | None
    amplitude_last_over_first: float | None
    units: str
    steps_used: int
    predicted_trace: np.ndarray  # [T] σ_pred(t)
    trend: np.ndarray  # [T] rolling median of the global loss
    reason: str | None = None
    micro_count: np.ndarray | None = None  # [T] M(t), micro-batches behind σ̂²(t)

    def to_json(self) -> dict[str, Any]:
        return {
            k: v for k, v in self.__dict__.items() if k not in ("predicted_trace", "trend", "micro_count")
        }


def rolling_median(x: np.ndarray, window: int) -> np.ndarray:
    """Centred rolling median ignoring nan (edges use the available part of the window)."""
    half = window // 2
    pad = np.concatenate((np.full(half, np.nan), x, np.full(half, np.nan)))
    return window_median(np.lib.stride_tricks.sliding_window_view(pad, window))


def robust_std(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    if x.size < 2:
        return math.nan
    return float(MAD_TO_STD * np.median(np.abs(x - np.median(x))))


def _micro_moments(
    run: RunData, series: Series
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """Per step (the columns of ``series``): Σk, Σk·m, Σk·m², M over all ranks' micro-batches with a
    finite loss value."""
    T = series.n_steps
    sk, skm, skm2, cnt = (np.zeros(T) for _ in range(4))
    units = "tokens"
    for data in run.ranks.values():
        c = data.steps
        if c is None or not len(c):
            continue
        m = np.where(c.fn_sum, c.fn_value / np.where(c.fn_n_valid > 0, c.fn_n_valid, np.nan), c.fn_value)
        k = c.fn_n_valid if np.isfinite(c.fn_n_valid).all() else c.samples
        if k is c.samples:
            units = "samples"
        step_of, on_axis = series.pos(np.repeat(c.step, c.micro_steps))
        ok = np.isfinite(m) & np.isfinite(k) & (k > 0) & on_axis
        km = k * m
        km2 = km * m
        if not ok.all():  # (nearly always all are: no masked copies then)
            step_of, k, km, km2 = step_of[ok], k[ok], km[ok], km2[ok]
        sk += np.bincount(step_of, weights=k, minlength=T)
        skm += np.bincount(step_of, weights=km, minlength=T)
        skm2 += np.bincount(step_of, weights=km2, minlength=T)
        cnt += np.bincount(step_of, minlength=T)
    return sk, skm, skm2, cnt, units


def why_no_prediction(run: RunData, cnt: np.ndarray) -> str:
    """Which piece the predicted noise is missing: the loss-function values, their sample/token
    counts, or a second micro-batch per optimizer step (ranks × accumulation)."""
    values = counted = 0
    for data in run.ranks.values():
        c = data.steps
        if c is None or not len(c):
            continue
        values += int(np.isfinite(c.fn_value).sum())
        counted += int((np.isfinite(c.fn_value) & ((c.fn_n_valid > 0) | (c.samples > 0))).sum())
    if values == 0:
        return (
            "no loss-function value was recorded (the probe reads the output of torch's loss functions, "
            "e.g. F.cross_entropy or nn.CrossEntropyLoss; this script's loss was computed otherwise)"
        )
    if counted == 0:
        return "the loss-function values have no sample or token count (micro-batch size not recorded)"
    most = int(cnt.max()) if cnt.size else 0
    return (
        f"needs ≥ 2 micro-batches per optimizer step (ranks × accumulation) with a loss-function value; "
        f"at most {most} recorded in a step"
    )


def noise_band(run: RunData, series: Series) -> NoiseBand:
    T = series.n_steps
    empty = np.full(T, np.nan)
    sk, skm, skm2, cnt, units = _micro_moments(run, series)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = skm / sk
        var_unit = (skm2 - sk * mean * mean) / (cnt - 1)  # σ̂²(t)
        pred = np.sqrt(np.clip(var_unit, 0, None) / sk)
    pred[(cnt < 2) | ~np.isfinite(pred)] = np.nan
    trend = rolling_median(series.global_loss, TREND_WINDOW) if T else empty
    resid = series.global_loss - trend
    inner = np.zeros(T, dtype=bool)
    h = TREND_WINDOW // 2
    inner[h : T - h] = True  # full windows only: no edge effect
    if not series.dense and 2 * h < T:  # steps read in windows: a trend window must not span a gap
        inner[h : T - h] &= (series.steps[2 * h :] - series.steps[: T - 2 * h]) == 2 * h
    ok = inner & np.isfinite(resid) & np.isfinite(pred) & ~series.skipped
    if (
        run.rollups is not None and not series.dense
    ):  # the rollup path's even sample, not windows read for a reason
        sampled = ok & run.rollups.sampled(series.steps)
        if int(sampled.sum()) >= MIN_STEPS:
            ok = sampled
    n = int(ok.sum())
    if n < MIN_STEPS:
        reason = (
            why_no_prediction(run, cnt)
            if not np.isfinite(pred).any()
            else f"only {n} usable steps (need {MIN_STEPS})"
        )
        return NoiseBand(None, None, None, None, None, None, units, n, pred, trend, reason, micro_count=cnt)
    observed = robust_std(resid[ok])
    predicted = float(np.sqrt(np.nanmedian(pred[ok] ** 2)))
    rank0_std = r0_ratio = None
    if 0 in series.ranks and len(series.ranks) > 1:
        loc = series.local_loss[series.row(0)]
        r0 = robust_std((loc - rolling_median(loc, TREND_WINDOW))[ok])
        rank0_std = r0
        r0_ratio = r0 / observed if observed > 0 else None
    third = n // 3
    amp = None
    if third >= 10:
        r = resid[ok]
        first, last = robust_std(r[:third]), robust_std(r[-third:])
        amp = last / first if first > 0 else None
    return NoiseBand(
        observed_std=observed,
        predicted_std=predicted,
        ratio=observed / predicted if predicted > 0 else None,
        rank0_std=rank0_std,
        rank0_over_global=r0_ratio,
        amplitude_last_over_first=amp,
        units=units,
        steps_used=n,
        predicted_trace=pred,
        trend=trend,
        micro_count=cnt,
    )
