"""How sure is a difference between two small sets of seeds? Bootstrap CIs and a symmetric effect.

* Confidence interval of a difference of means, mean(v) − mean(b), by the percentile bootstrap:
  resample each arm's seeds with replacement B times, take the (α/2, 1 − α/2) quantiles of the
  resampled differences (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13).
  With very few seeds (K = 2–3) the interval is too narrow rather than too wide: treat it as a
  lower bound on the uncertainty, and use K ≥ 5 to rely on it.
* Symmetric relative change of a mean, d = (v − b) / ((|v| + |b|) / 2) ∈ [−2, 2], 0 when both are 0
  (the "symmetric percentage difference"): unlike (v − b)/b it is defined for b = 0 (spike
  counts) and treats "halved" and "doubled" alike. An infinite (diverged) arm against a finite
  one scores ±2.
"""

from __future__ import annotations

import math

import numpy as np

BOOTSTRAP_SAMPLES = 2000
CONFIDENCE = 0.95
# A fixed seed: the same run directories give the same table every time.
BOOTSTRAP_SEED = 0


def mean(values: list[float]) -> float:
    """Mean that is +inf if any value is +inf (a diverged seed) and nan for no values."""
    if not values:
        return math.nan
    if any(math.isinf(v) and v > 0 for v in values):
        return math.inf
    return float(np.mean(values))


def bootstrap_diff_ci(
    variant: list[float],
    baseline: list[float],
    samples: int = BOOTSTRAP_SAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of mean(variant) − mean(baseline); (nan, nan) if not computable."""
    v = np.asarray(variant, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if v.size == 0 or b.size == 0 or not (np.isfinite(v).all() and np.isfinite(b).all()):
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    dv = v[rng.integers(0, v.size, size=(samples, v.size))].mean(axis=1)
    db = b[rng.integers(0, b.size, size=(samples, b.size))].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(dv - db, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def symmetric_change(variant: float, baseline: float) -> float:
    """(v − b) / ((|v| + |b|) / 2), in [−2, 2]; nan if either is nan."""
    if math.isnan(variant) or math.isnan(baseline):
        return math.nan
    if math.isinf(variant) or math.isinf(baseline):
        if math.isinf(variant) and math.isinf(baseline):
            return 0.0
        return 2.0 if math.isinf(variant) else -2.0
    scale = (abs(variant) + abs(baseline)) / 2
    return 0.0 if scale == 0 else (variant - baseline) / scale
