"""Gradient noise scale B_simple from the local and global gradient norms DDP already computes.

McCandlish, Kaplan, Amodei et al. 2018, "An Empirical Model of Large-Batch Training",
Appendix A.1: with two batch sizes B_small < B_big and the squared norms of gradients estimated on
them,

    |G|^2  ≈ (B_big |G_big|^2 − B_small |G_small|^2) / (B_big − B_small)
    tr(Σ)  ≈ (|G_small|^2 − |G_big|^2) / (1/B_small − 1/B_big)
    B_simple = tr(Σ) / |G|^2

Here B_small is one rank's batch per optimizer step (all its micro-steps), |G_small|^2 the mean
over ranks of the local squared norm at the synchronising micro-step, B_big = world_size × B_small
and |G_big|^2 the squared norm after the all-reduce. Both estimators are unbiased but very noisy
per step, so (as the paper does) numerator and denominator are averaged separately before the
ratio: sums over a trailing 50-step window for the plotted trace, and block means over the whole
run for the headline value. Its standard error is the ratio-estimator error from the block means
(blocks of :data:`BLOCK` steps absorb step-to-step correlation):

    se(S̄/Ḡ) ≈ sqrt( Var_b(S_b − B·G_b) / n_b ) / Ḡ

Valid only where the local buffer holds the whole accumulated local gradient (sync on the last
micro-step only, or one micro-step per optimizer step); the caller passes that mask.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.quantities.series import Series
from ddp_doctor.analysis.quantities.sharding import global_sq
from ddp_doctor.rundir.rollup_read import RollupView

BLOCK = 10  # steps per block for the standard error
TRACE_WINDOW = 50  # steps summed for the plotted trace
MIN_STEPS = 20  # fewer usable steps than this: not measured


@dataclass
class GNS:
    b_simple: float | None  # in samples
    stderr: float | None
    lower_bound: bool  # |G|^2 not resolved above 0: b_simple is a lower bound
    b_simple_tokens: float | None
    stderr_tokens: float | None
    lower_bound_tokens: bool  # the same for the token-based estimate
    steps_used: int
    trace: np.ndarray  # [T] trailing-window estimate (nan where undefined)
    reason: str | None = None  # why not measured

    def to_json(self) -> dict[str, Any]:
        return {
            "b_simple": self.b_simple,
            "stderr": self.stderr,
            "lower_bound": self.lower_bound,
            "b_simple_tokens": self.b_simple_tokens,
            "stderr_tokens": self.stderr_tokens,
            "lower_bound_tokens": self.lower_bound_tokens,
            "steps_used": self.steps_used,
            "reason": self.reason,
        }


def per_step_estimates(
    gsq_small: np.ndarray, gsq_big: np.ndarray, b_small: np.ndarray, b_big: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased per-step estimates (|G|^2, tr Σ) from the two squared norms (App. A.1)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        g2 = (b_big * gsq_big - b_small * gsq_small) / (b_big - b_small)
        s = (gsq_small - gsq_big) / (1.0 / b_small - 1.0 / b_big)
    return g2, s


def ratio_with_stderr(s: np.ndarray, g2: np.ndarray, block: int = BLOCK) -> tuple[float, float, bool]:
    """B = mean(S)/mean(G²) with its block standard error; flags a lower bound when G² ≤ 2 se.

    Total over degenerate input: no values, or an upper end of |G|² that is not positive (every
    gradient exactly 0, a zero-loss run), give (nan, nan, True): there is no ratio to quote."""
    if len(s) == 0:
        return math.nan, math.nan, True
    n_b = len(s) // block
    if n_b >= 2:
        s_b = s[: n_b * block].reshape(n_b, block).mean(axis=1)
        g_b = g2[: n_b * block].reshape(n_b, block).mean(axis=1)
    else:
        s_b, g_b = s, g2
        n_b = len(s)
    s_m, g_m = float(s_b.mean()), float(g_b.mean())
    se_g = float(g_b.std(ddof=1) / math.sqrt(n_b)) if n_b > 1 else math.inf
    if not math.isfinite(g_m) or not math.isfinite(s_m):
        return math.nan, math.nan, True
    if g_m <= 2 * se_g:
        # |G|^2 is not resolved: quote the value at the upper end of |G|^2 as a lower bound
        top = g_m + 2 * se_g
        return (s_m / top if top > 0 and math.isfinite(top) else math.nan), math.nan, True
    b = s_m / g_m
    se = float(np.std(s_b - b * g_b, ddof=1) / math.sqrt(n_b) / g_m) if n_b > 1 else math.nan
    return b, se, False


def rolling_ratio(s: np.ndarray, g2: np.ndarray, window: int = TRACE_WINDOW) -> np.ndarray:
    """Σ S / Σ |G|² over the last ``window`` steps (nan steps skipped; ≥ window/2 values needed)."""
    ok = np.isfinite(s) & np.isfinite(g2)
    cs = np.concatenate(([0.0], np.cumsum(np.where(ok, s, 0.0))))
    cg = np.concatenate(([0.0], np.cumsum(np.where(ok, g2, 0.0))))
    cn = np.concatenate(([0], np.cumsum(ok)))
    lo = np.maximum(np.arange(1, s.size + 1) - window, 0)
    hi = np.arange(1, s.size + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = (cs[hi] - cs[lo]) / (cg[hi] - cg[lo])
    out[(cn[hi] - cn[lo]) < window // 2] = np.nan
    return out


def gradient_noise_scale(
    series: Series, world_size: int, valid: np.ndarray, replicas: int | None = None
) -> GNS:
    """B_simple over the steps where ``valid`` is true and both norms were recorded."""
    empty = np.full(series.n_steps, np.nan)

    def not_measured(steps: int, reason: str) -> GNS:
        return GNS(None, None, False, None, None, False, steps, empty, reason)

    if world_size < 2:
        return not_measured(0, "needs world size ≥ 2 (two batch sizes)")
    finite = np.isfinite(series.gsq_local)
    with np.errstate(invalid="ignore", divide="ignore"):
        gs = (
            np.where(finite, series.gsq_local, 0.0).sum(axis=0) / finite.sum(axis=0)
            if series.gsq_local.size
            else empty
        )
    gb = global_sq(series.gsq_global, replicas) if series.gsq_global.size else empty
    bs = np.nanmean(series.samples, axis=0)
    ok = valid & np.isfinite(gs) & np.isfinite(gb) & np.isfinite(bs) & (bs > 0)
    n = int(ok.sum())
    if n < MIN_STEPS:
        return not_measured(n, f"only {n} steps with local and global gradient norms (need {MIN_STEPS})")
    if not (np.any(gs[ok] > 0) or np.any(gb[ok] > 0)):
        # every gradient exactly 0 (a constant or zero loss): there is no noise scale to measure
        return not_measured(
            n, f"every recorded gradient norm is exactly 0 ({n} steps): no gradient, no noise scale"
        )
    g2, s = per_step_estimates(gs[ok], gb[ok], bs[ok], world_size * bs[ok])
    b, se, lower = ratio_with_stderr(s, g2)
    if not math.isfinite(b):
        return not_measured(
            n, f"|G|² and tr(Σ) estimates are not finite over the {n} steps (no ratio to quote)"
        )
    bt, set_, lower_t = None, None, False
    with warnings.catch_warnings():  # a step without token counts is nan, not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        tok = np.nanmean(series.tokens, axis=0)
    okt = ok & np.isfinite(tok) & (tok > 0)
    if okt.sum() >= MIN_STEPS:
        g2t, st = per_step_estimates(gs[okt], gb[okt], tok[okt], world_size * tok[okt])
        bt_, set_raw, lower_t = ratio_with_stderr(st, g2t)
        if math.isfinite(bt_):
            bt, set_ = bt_, (None if math.isnan(set_raw) else set_raw)
        else:
            lower_t = False
    g2_full = np.full(series.n_steps, np.nan)
    s_full = np.full(series.n_steps, np.nan)
    g2_full[ok], s_full[ok] = g2, s
    trace = rolling_ratio(s_full, g2_full)
    trace[~np.isfinite(trace) | (trace < 0)] = np.nan
    return GNS(
        b_simple=b,
        stderr=None if math.isnan(se) else se,
        lower_bound=lower,
        b_simple_tokens=bt,
        stderr_tokens=set_,
        lower_bound_tokens=lower_t,
        steps_used=n,
        trace=trace,
    )


def from_rollups(view: RollupView, world_size: int, valid: bool) -> tuple[float, float, bool, int] | None:
    """B_simple over every step of the run from the rollups' sums (the rollup path), or None when
    they do not determine it: (B_simple, se, lower bound, steps).

    With a constant batch per rank B_small, S and |G|² (module doc) are linear in the two squared
    norms, so their sums over a window are the same expressions of the window's sums: Σ_t |G_small|²
    (the mean over ranks) is Σ over ranks of the local sums / ranks, Σ_t |G_big|² the ranks' global
    sums (the same on every rank) / ranks. The headline is the raw path's ratio of means over every
    step; the windows are the blocks of its standard error (R steps instead of BLOCK). Needs every
    rank's every step of a window to hold both norms, one batch size throughout, world size ≥ 2, and
    the sync pattern that makes the local buffer the whole local gradient (``valid``)."""
    if not valid or world_size < 2 or not len(view.ranks):
        return None
    full = view.ranks * view.window_steps
    use = (
        (view.ranks == world_size)
        & (view.gsql[:, 0] == full)
        & (view.gsq[:, 0] == full)
        & (view.gsql[:, 1] == 0)
        & (view.gsq[:, 1] == 0)
        & (full > 0)
    )
    samples = view.samples[use]
    if (
        int(use.sum()) < 2
        or not (samples[:, 1] == 0).all()
        or np.nanmin(samples[:, 4]) != np.nanmax(samples[:, 5])
    ):
        return None
    bs = float(samples[0, 4])
    if not bs > 0:
        return None
    n = view.window_steps[use].astype(float)
    gs = view.gsql[use, 2] / view.ranks[use] / n  # window means of |G_small|²
    gb = view.gsq[use, 2] / view.ranks[use] / n
    g2, s = per_step_estimates(gs, gb, np.full(len(n), bs), np.full(len(n), world_size * bs))
    if not (np.isfinite(g2).all() and np.isfinite(s).all()):
        return None
    b, se, lower = ratio_with_stderr(s * n / n.mean(), g2 * n / n.mean(), block=1)
    return (b, se, lower, int(n.sum())) if math.isfinite(b) else None
