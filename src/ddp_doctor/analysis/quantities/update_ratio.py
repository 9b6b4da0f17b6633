"""Update/parameter ratio per parameter type, judged against a type-specific threshold.

ρ = ‖θ_after − θ_before‖ / ‖θ_before‖ per optimizer step, from the `update` records every level
writes (a sample of tensors, probe/instruments/update_sample.py) or, when those are absent, from
level `full`'s per-layer-group norms. The usual value is about 1e-3 (Karpathy, CS231n "Neural
Networks Part 3": "the ratio of the updates to the values ... somewhere around 1e-3").

Why per type and why late steps (the calibration, measured on this project's runs): Adam moves
each entry by about lr · |m̂/√v̂| ≤ lr, so ρ ≈ lr · rms(m̂/√v̂) / rms(θ) depends on the
*initial scale* of the tensor as much as on the lr:

* norm gains start at 1, so their ρ reads the per-entry step size directly: healthy Adam runs
  (lr 3e-4 … 3e-3) give 1e-4 … 4e-3, a tiny LM at lr 0.3 gives 0.02 … 0.23. Threshold
  :data:`THRESHOLDS` ["norm"] = 1e-2, 10× the CS231n value.
* embeddings and weight matrices start small (std 0.02 in GPT-style inits), so a healthy young
  model shows ρ of 0.01 … 0.04 (the reference trainer's embeddings 0.011–0.013; a tiny LM at
  lr 3e-3 0.02–0.04), while an lr 10× too high gives ≳ 0.1. Threshold 0.1.
* biases (and other zero-initialised tensors) have ‖θ‖ ≈ 0 at the start: ρ is unbounded on a
  healthy run, so they are reported, never judged.
* Adam's first steps move every entry by ≈ lr (m̂/√v̂ = ±1 at step 0), so steps below
  :data:`EARLY_STEPS` measure lr against the init scale, not instability: they are reported but
  not judged. With fewer than :data:`MIN_SAMPLES` judged samples the result is inconclusive.

A type is "high" when the median of its ρ over the judged samples exceeds its threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddp_doctor.core.catalog import limit

_MATRIX = limit("update-ratio-high", "matrix")
THRESHOLDS: dict[str, float] = {
    "norm": limit("update-ratio-high", "norm"),
    "embedding": _MATRIX,
    "matrix": _MATRIX,
    "vector": _MATRIX,
}
NOT_JUDGED = ("bias",)
EARLY_STEPS = int(limit("update-ratio-high", "early_steps"))
MIN_SAMPLES = 2
# level `full` layer groups → parameter type (groups mix biases into matrices: their norm is small)
FULL_GROUP_TYPE = {"embedding": "embedding", "norm": "norm"}


@dataclass
class TypeRatio:
    median: float | None  # over judged samples (steps ≥ EARLY_STEPS)
    maximum: float | None
    early_median: float | None  # steps < EARLY_STEPS
    samples: int  # judged
    tensors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class UpdateRatios:
    source: str  # "sampled (update records)" | "level full (per layer group)"
    per_type: dict[str, TypeRatio]
    steps: list[int]  # steps with a measurement
    high: dict[str, float]  # type → judged median above its threshold
    judged_steps: list[int]

    @property
    def judged(self) -> dict[str, TypeRatio]:
        return {t: r for t, r in self.per_type.items() if t in THRESHOLDS and r.samples >= MIN_SAMPLES}


def _ratio(update: object, param: object) -> float:
    try:
        u, p = float(update), float(param)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return u / p if p > 0 and math.isfinite(u) and math.isfinite(p) else math.nan


def _samples_from_updates(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, float, str]]]:
    out: dict[str, list[tuple[int, float, str]]] = {}
    for rec in records:
        step = rec.get("step")
        if not isinstance(step, int):
            continue
        for t in rec.get("tensors") or ():
            if not isinstance(t, dict):
                continue
            kind = str(t.get("type", "matrix"))
            out.setdefault(kind, []).append(
                (step, _ratio(t.get("update_norm"), t.get("param_norm")), str(t.get("name", "")))
            )
    return out


def _samples_from_full(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, float, str]]]:
    out: dict[str, list[tuple[int, float, str]]] = {}
    for rec in records:
        step = rec.get("step")
        if not isinstance(step, int):
            continue
        for g, v in (rec.get("groups") or {}).items():
            if not isinstance(v, dict):
                continue
            kind = FULL_GROUP_TYPE.get(str(g), "matrix")
            out.setdefault(kind, []).append((step, _ratio(v.get("update_norm"), v.get("param_norm")), str(g)))
    return out


def update_ratios(
    update_records: list[dict[str, Any]], full_records: list[dict[str, Any]]
) -> UpdateRatios | None:
    if update_records:
        source, samples = "sampled (update records)", _samples_from_updates(update_records)
    elif full_records:
        source, samples = "level full (per layer group)", _samples_from_full(full_records)
    else:
        return None
    per_type: dict[str, TypeRatio] = {}
    high: dict[str, float] = {}
    steps: set[int] = set()
    judged_steps: set[int] = set()
    for kind, values in samples.items():
        late = [(s, r) for s, r, _ in values if s >= EARLY_STEPS and math.isfinite(r)]
        early = [r for s, r, _ in values if s < EARLY_STEPS and math.isfinite(r)]
        steps.update(s for s, _, _ in values)
        med = float(np.median([r for _, r in late])) if late else None
        per_type[kind] = TypeRatio(
            median=med,
            maximum=float(max(r for _, r in late)) if late else None,
            early_median=float(np.median(early)) if early else None,
            samples=len(late),
            tensors=sorted({n for _, _, n in values}),
        )
        if kind in THRESHOLDS and len(late) >= MIN_SAMPLES:
            judged_steps.update(s for s, _ in late)
            if med is not None and med > THRESHOLDS[kind]:
                high[kind] = med
    return UpdateRatios(
        source=source,
        per_type=per_type,
        steps=sorted(steps),
        high=high,
        judged_steps=sorted(judged_steps),
    )
