"""FSDP2: quantities each rank recorded for its own shard, combined across ranks.

The probe never issues a collective (an instrument disabled on one rank would leave the others
waiting), so under FSDP2 (DTensor parameters and gradients) each rank records what it holds and
the full value is assembled here, offline:

* `grad_sq_global` (step records): ‖this rank's shard of the reduced gradient‖²; the global
  ‖g‖² = Σ_r shard_r², written into every rank's row so consumers read it as they do for DDP.
* clip entries with `total_norm_shard` (clip_grad_norm_ returned a partial DTensor): the p-norm of
  this rank's shards; total = (Σ_r shard_r^p)^(1/p), max_r shard_r for p = inf.
* `full` records with `"sharded": true`: per-group norms combine in quadrature, `numel` and Adam's
  `below`/`numel` counts add up.

A step missing on any rank stays nan: a partial sum is not the norm.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddp_doctor.rundir.reader import CLIP_COLUMNS, RunData


def is_fsdp2(run: RunData) -> bool:
    cfg = run.config("fsdp")
    return cfg is not None and cfg.get("version") == 2


def combine_grad_sq(gsq_global: np.ndarray) -> np.ndarray:
    """[R, T] per-rank shard ‖·‖² → [R, T] with every row the global ‖g‖² (nan where a rank lacks it)."""
    if gsq_global.size == 0:
        return gsq_global
    total = np.where(np.isfinite(gsq_global).all(axis=0), np.nansum(gsq_global, axis=0), np.nan)
    return np.broadcast_to(total, gsq_global.shape).copy()


def combine_clip(run: RunData) -> tuple[np.ndarray, np.ndarray]:
    """The lowest rank's clip calls (steps, [calls, len(CLIP_COLUMNS)]) with sharded totals combined."""
    empty = (np.zeros(0, dtype=np.int64), np.zeros((0, len(CLIP_COLUMNS))))
    base = run.ranks[min(run.ranks)].steps if run.ranks else None
    if base is None:
        return empty
    step, clip = base.clip_step, base.clip.copy()
    shard_col, p_col, total_col = (
        CLIP_COLUMNS.index(k) for k in ("total_norm_shard", "norm_type", "total_norm")
    )
    sharded = np.isfinite(clip[:, shard_col])
    if not sharded.any():
        return step, clip
    others = [run.ranks[r].steps for r in sorted(run.ranks)]
    if len(others) != run.world_size or any(
        c is None or c.clip.shape != clip.shape or not np.array_equal(c.clip_step, step) for c in others
    ):
        return step, clip  # calls do not line up on every rank: leave the totals unknown
    shards = np.stack([c.clip[:, shard_col] for c in others])  # type: ignore[union-attr]
    p = clip[:, p_col]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        finite_p = np.where(np.isfinite(p) & (p > 0), p, 2.0)
        total = np.where(np.isinf(p), shards.max(axis=0), (shards**finite_p).sum(axis=0) ** (1.0 / finite_p))
    clip[sharded, total_col] = total[sharded]
    return step, clip


def combine_full(run: RunData) -> list[dict[str, Any]]:
    """`full` records for the ratios: the lowest rank's, or all ranks' combined when sharded."""
    per_rank = [run.ranks[r].full for r in sorted(run.ranks) if run.ranks[r].full]
    if not per_rank:
        return []
    first = per_rank[0]
    if not any(isinstance(rec, dict) and rec.get("sharded") is True for rec in first):
        return first
    if len(per_rank) != run.world_size:
        return []  # a missing rank's shard: no full value
    by_step: dict[Any, list[dict[str, Any]]] = {}
    for records in per_rank:
        for rec in records:
            if isinstance(rec, dict):
                by_step.setdefault(rec.get("step"), []).append(rec)
    return [
        _merge(recs)
        for _, recs in sorted(by_step.items(), key=lambda kv: str(kv[0]))
        if len(recs) == len(per_rank)
    ]


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _merge(recs: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, dict[str, float]] = {}
    for rec in recs:
        for name, v in (rec.get("groups") or {}).items():
            if not isinstance(v, dict):
                continue
            g = groups.setdefault(
                str(name), {"grad_sq": 0.0, "param_sq": 0.0, "update_sq": 0.0, "numel": 0.0}
            )
            for key in ("grad", "param", "update"):
                g[f"{key}_sq"] += _num(v.get(f"{key}_norm")) ** 2
            g["numel"] += _num(v.get("numel"))
    adam: dict[Any, dict[str, Any]] = {}
    for rec in recs:
        for a in rec.get("adam") or ():
            if not isinstance(a, dict):
                continue
            entry = adam.setdefault(
                a.get("group"), {"group": a.get("group"), "eps": a.get("eps"), "below": 0.0, "numel": 0.0}
            )
            entry["below"] += _num(a.get("below"))
            entry["numel"] += _num(a.get("numel"))
    for entry in adam.values():
        entry["frac_v_below_eps2"] = entry["below"] / entry["numel"] if entry["numel"] else math.nan
    return {
        "kind": "full",
        "step": recs[0].get("step"),
        "groups": {
            name: {
                "grad_norm": math.sqrt(g["grad_sq"]),
                "param_norm": math.sqrt(g["param_sq"]),
                "update_norm": math.sqrt(g["update_sq"]),
                "numel": g["numel"],
            }
            for name, g in groups.items()
        },
        "adam": list(adam.values()),
    }
