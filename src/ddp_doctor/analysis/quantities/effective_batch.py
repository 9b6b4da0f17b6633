"""The effective batch per optimizer step, measured from the records (not assumed from flags).

    B_eff(t) = sum over ranks r, micro-steps i of samples_{r,i}(t)      (and the same for tokens)

Missing ranks are extrapolated as ``present-rank median × world_size`` and flagged as estimated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.quantities.series import Series


@dataclass
class EffectiveBatch:
    samples: float | None  # median over optimizer steps
    tokens: float | None
    samples_min: float | None
    samples_max: float | None
    tokens_min: float | None
    tokens_max: float | None
    per_rank_samples: float | None
    micro_steps: float | None  # median micro-steps per optimizer step (the accumulation count)
    estimated: bool  # some ranks were missing, so the totals are extrapolated
    reason: str | None = None  # why ``samples`` is not measured (None when it is)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def _stat(x: np.ndarray) -> tuple[float | None, float | None, float | None]:
    x = x[np.isfinite(x)]
    if not x.size:
        return None, None, None
    return float(np.median(x)), float(x.min()), float(x.max())


def effective_batch(series: Series, world_size: int) -> EffectiveBatch:
    present = len(series.ranks)
    if present == 0 or series.n_steps == 0:
        return EffectiveBatch(
            None, None, None, None, None, None, None, None, False, "no optimizer step was recorded"
        )
    complete = np.isfinite(series.samples).all(axis=0)
    factor = world_size / present
    samples = series.samples[:, complete].sum(axis=0) * factor
    tokens = series.tokens[:, complete].sum(axis=0) * factor
    s, smin, smax = _stat(samples)
    tk, tmin, tmax = _stat(tokens)
    micro = series.micro[np.isfinite(series.micro)]
    return EffectiveBatch(
        reason=None if s is not None else _why_not(series),
        samples=s,
        tokens=tk,
        samples_min=smin,
        samples_max=smax,
        tokens_min=tmin,
        tokens_max=tmax,
        per_rank_samples=_stat(series.samples.ravel())[0],
        micro_steps=float(np.median(micro)) if micro.size else None,
        estimated=present < world_size,
    )


def _why_not(series: Series) -> str:
    """Why no step has a measured batch: which piece of the records is missing."""
    if not np.isfinite(series.samples).any():
        if not np.isfinite(series.micro).any() or not np.nansum(series.micro):
            return "no micro-step (forward + backward) was recorded in any optimizer step"
        return (
            "no micro-batch size was recorded: the probe reads it from the leading dimension of the "
            "watched model's tensor input (DDP/FSDP wrapper), and no such forward was seen"
        )
    return "no optimizer step has the micro-batch sizes of every rank"
