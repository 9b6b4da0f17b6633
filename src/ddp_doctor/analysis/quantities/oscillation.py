"""Is the step-to-step oscillation of a loss curve minibatch noise? Observed vs predicted std, with
a confidence interval, so that a short run can decide when the evidence is strong.

Observed: second differences d_t = L(t+1) − 2 L(t) + L(t−1) of consecutive steps remove the
training trend up to its local slope; for independent step noise of variance σ², Var(d) = 6σ².
A robust (median/MAD) estimate keeps a few early steps of a fast-falling loss from dominating:

    σ_obs = 1.4826 · MAD(d) / √6.

Predicted: the minibatch-noise std of the global loss per step from the micro-batches' spread
(:mod:`ddp_doctor.analysis.quantities.noise_band`: σ_pred(t) = sqrt(σ̂²(t) / K(t))), pooled as
sqrt(median σ_pred(t)²) over the same steps.

Sampling error: d is an MA(2) series (lag correlations −2/3, 1/6), so its variance estimate has
the error of ν = n / (1 + 2 (4/9 + 1/36)) = n / 1.94 independent values, and the MAD keeps 37 %
of that (its asymptotic efficiency for normal data): ν_obs = 0.37 · n / 1.94. σ̂²_obs · ν / σ² is
taken as χ²(ν) (Wilson–Hilferty approximation for its quantiles); the predicted variance is pooled
over Σ_t (M_t − 1) micro-batch degrees of freedom. The 95 % interval of the ratio divides the
observed interval's ends by the opposite ends of the predicted one (conservative). Decision:

* "above the band" when the interval's lower end exceeds :data:`WITHIN_NOISE_RATIO` (1.5, the
  noise band's limit);
* "within the band" when its upper end is at most 1.5;
* otherwise undecided, with the number of steps at which the same ratio would decide it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.quantities.noise_band import WITHIN_NOISE_RATIO

MAD_TO_STD = 1.4826
SECOND_DIFF_VAR = 6.0  # Var(d) / σ² for independent noise
MA2_FACTOR = 1.0 + 2.0 * ((2.0 / 3.0) ** 2 + (1.0 / 6.0) ** 2)  # 1.94
MAD_EFFICIENCY = 0.37
Z95 = 1.959964  # two-sided 95 %
MIN_DIFFS = 8  # second differences needed before any statement
MAX_STEPS_NEEDED = 100_000


def chi2_quantile(p_z: float, nu: float) -> float:
    """Quantile of χ²(ν) at the standard-normal quantile ``p_z`` (Wilson–Hilferty 1931)."""
    nu = max(nu, 1e-9)
    a = 2.0 / (9.0 * nu)
    return nu * max(1.0 - a + p_z * math.sqrt(a), 1e-6) ** 3


def var_interval(var: float, nu: float) -> tuple[float, float]:
    """95 % interval of a variance estimated with ν degrees of freedom."""
    return var * nu / chi2_quantile(Z95, nu), var * nu / chi2_quantile(-Z95, nu)


def robust_second_diff_std(x: np.ndarray) -> tuple[float | None, int]:
    """σ_obs of the series (nan-free runs of consecutive values) and the number of differences."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x)
    d = x[2:] - 2 * x[1:-1] + x[:-2]
    d = d[ok[2:] & ok[1:-1] & ok[:-2]]
    if d.size < MIN_DIFFS:
        return None, int(d.size)
    mad = float(np.median(np.abs(d - np.median(d))))
    return MAD_TO_STD * mad / math.sqrt(SECOND_DIFF_VAR), int(d.size)


def obs_dof(n_diffs: int) -> float:
    return MAD_EFFICIENCY * n_diffs / MA2_FACTOR


@dataclass
class Oscillation:
    observed_std: float | None
    predicted_std: float | None
    ratio: float | None
    ratio_low: float | None  # 95 % interval of observed / predicted
    ratio_high: float | None
    steps_used: int
    decision: str  # "above-band" | "within-band" | "undecided" | "not-measured"
    steps_needed: int | None  # undecided: steps at which the same ratio would decide
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _ratio_interval(obs: float, n_diffs: int, pred: float, pred_dof: float) -> tuple[float, float]:
    lo_o, hi_o = var_interval(obs * obs, obs_dof(n_diffs))
    lo_p, hi_p = var_interval(pred * pred, pred_dof) if pred_dof > 0 else (pred * pred, pred * pred)
    return math.sqrt(lo_o / hi_p), math.sqrt(hi_o / lo_p)


def _steps_needed(ratio: float, n_diffs: int, pred: float, pred_dof: float, steps: int) -> int | None:
    """Smallest run length at which the same ratio's interval would exclude WITHIN_NOISE_RATIO."""
    per_step_dof = pred_dof / max(steps, 1)

    def decides(n: int) -> bool:
        lo, hi = _ratio_interval(ratio * pred, n, pred, per_step_dof * n)
        return lo > WITHIN_NOISE_RATIO or hi <= WITHIN_NOISE_RATIO

    n = max(n_diffs, MIN_DIFFS)
    while not decides(n):
        n *= 2
        if n > MAX_STEPS_NEEDED:
            return None
    lo_n = n // 2
    while lo_n + 1 < n:  # bisect: decides(n) holds, decides(lo_n) does not (or lo_n is the start)
        mid = (lo_n + n) // 2
        if decides(mid):
            n = mid
        else:
            lo_n = mid
    return n + 2  # n second differences need n + 2 steps


def oscillation(
    loss: np.ndarray,
    predicted_trace: np.ndarray,
    pred_dof_per_step: np.ndarray,
    why_no_prediction: str | None = None,
) -> Oscillation:
    """``loss`` [T] (nan = missing/skipped), ``predicted_trace`` [T] σ_pred(t), and the micro-batch
    degrees of freedom M_t − 1 per step; ``why_no_prediction``: the noise band's reason when it
    predicted nothing (named instead of the generic one)."""
    obs, n = robust_second_diff_std(loss)
    usable = np.isfinite(loss) & np.isfinite(predicted_trace)
    steps = int(usable.sum())
    if obs is None:
        return Oscillation(
            None, None, None, None, None, n, "not-measured", None,
            f"needs ≥ {MIN_DIFFS + 2} consecutive steps with a finite loss",
        )  # fmt: skip
    if steps == 0:
        return Oscillation(
            obs, None, None, None, None, n, "not-measured", None,
            why_no_prediction
            or "needs ≥ 2 micro-batches per optimizer step (ranks × accumulation) with a recorded "
            "loss-function value to predict the noise",
        )  # fmt: skip
    pred = float(np.sqrt(np.median(predicted_trace[usable] ** 2)))
    dof = float(np.nansum(np.where(usable, pred_dof_per_step, 0.0)))
    if not pred > 0:
        return Oscillation(obs, pred, None, None, None, n, "not-measured", None, "predicted noise is 0")
    ratio = obs / pred
    lo, hi = _ratio_interval(obs, n, pred, dof)
    if lo > WITHIN_NOISE_RATIO:
        decision, needed = "above-band", None
    elif hi <= WITHIN_NOISE_RATIO:
        decision, needed = "within-band", None
    else:
        decision, needed = "undecided", _steps_needed(ratio, n, pred, dof, steps)
    return Oscillation(obs, pred, ratio, lo, hi, n, decision, needed)
