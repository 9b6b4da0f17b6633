"""Per-rank skew: does one rank's loss (or gradient norm) differ persistently from the others?

For rank r, d_t = x_r(t) − mean_{q≠r} x_q(t). Under "all ranks draw from the same distribution"
E[d] = 0. Serial correlation is absorbed by averaging d over blocks of :data:`BLOCK` steps; the
block means are then treated as independent (the batch-means method of simulation output
analysis, e.g. Law & Kelton, *Simulation Modeling and Analysis*):

    t_r = mean(d_b) / (sd(d_b) / sqrt(n_b)),    p_r = 2 (1 − Φ(|t_r|)) × R   (Bonferroni over R ranks)

A rank is skewed when p_r < :data:`ALPHA` and the shift is also practically large:
|mean d| / |mean x| > :data:`MIN_REL_EFFECT`. The rank named is the skewed one with the largest
|mean d| (the one the per-rank means single out), not the one with the largest |t|.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.core.catalog import limit

BLOCK = 10
ALPHA = limit("rank-data-skew", "alpha")
MIN_REL_EFFECT = limit("rank-data-skew", "min_shift")
MIN_BLOCKS = 5


@dataclass
class RankSkew:
    signal: str
    per_rank_mean: dict[int, float]
    worst_rank: int
    shift: float  # mean d of the worst rank
    relative_shift: float
    t: float
    p: float
    skewed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "per_rank_mean": {str(k): round(v, 6) for k, v in self.per_rank_mean.items()},
            "worst_rank": self.worst_rank,
            "shift": self.shift,
            "relative_shift": self.relative_shift,
            "t": self.t,
            "p_bonferroni": self.p,
            "alpha": ALPHA,
            "min_relative_shift": MIN_REL_EFFECT,
        }


def rank_skew(x: np.ndarray, ranks: list[int], signal: str) -> RankSkew | None:
    """Test each row of ``x`` [R, T] against the others; None when too little data."""
    R = x.shape[0]
    cols = np.isfinite(x).all(axis=0)
    x = x[:, cols]
    n_b = x.shape[1] // BLOCK
    if R < 2 or n_b < MIN_BLOCKS:
        return None
    x = x[:, : n_b * BLOCK]
    total = x.sum(axis=0)
    best: RankSkew | None = None
    scale = abs(float(x.mean())) or 1.0
    per_rank_mean = {r: float(v) for r, v in zip(ranks, x.mean(axis=1))}  # once: R passes at 1,024 ranks
    for i in range(R):
        d = x[i] - (total - x[i]) / (R - 1)
        db = d.reshape(n_b, BLOCK).mean(axis=1)
        sd = float(db.std(ddof=1))
        shift = float(db.mean())
        t = shift / (sd / math.sqrt(n_b)) if sd > 0 else (math.inf if shift else 0.0)
        p = min(1.0, math.erfc(abs(t) / math.sqrt(2)) * R)
        cand = RankSkew(
            signal=signal,
            per_rank_mean=per_rank_mean,
            worst_rank=ranks[i],
            shift=shift,
            relative_shift=abs(shift) / scale,
            t=t,
            p=p,
            skewed=p < ALPHA and abs(shift) / scale > MIN_REL_EFFECT,
        )
        if best is None or _rank_key(cand) > _rank_key(best):
            best = cand
    return best


def _rank_key(c: RankSkew) -> tuple[bool, float]:
    """Which rank to name: among skewed ranks the one whose mean is furthest from the others'
    (|shift|), else the largest |t|. One outlier shifts each other rank's d by -shift/(R-1) only,
    but with less noise (its own, plus 1/(R-1) of the outlier's), so the other ranks' |t| can
    exceed the outlier's: |t| alone named rank 0 where rank 3 ran at 4× the others."""
    return (c.skewed, abs(c.shift) if c.skewed else abs(c.t))
