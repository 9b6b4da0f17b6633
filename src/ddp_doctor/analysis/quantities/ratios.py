"""Per-layer-group update/parameter ratios and Adam-epsilon domination, from `full` records.

Update ratio of group g at a recorded step: ρ_g = ‖θ_after − θ_before‖ / ‖θ_before‖. The usual
range is about 1e-3 per step (Karpathy, CS231n notes "Neural Networks Part 3": "the ratio of the
updates to the values ... somewhere around 1e-3"); the limits per parameter type are the
catalog's (update-ratio-high, judged in quantities/update_ratio.py). We take the median over the recorded steps, so one spike does not decide it.

Adam step per entry is lr · m̂ / (sqrt(v̂) + eps): where v̂ < eps², eps dominates the denominator
and the entry moves by ≈ lr · m̂ / eps instead of ≈ lr · sign-like m̂ / sqrt(v̂) (Kingma & Ba 2015;
Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer training instabilities",
discuss how an eps that is large against the gradient RMS shrinks the update). A group is eps-dominated when
the median share of entries with v̂ < eps² exceeds :data:`ADAM_EPS_SHARE` (ddp-doctor's choice:
a quarter of the entries is enough to change the effective step of the group).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.core.catalog import limit

ADAM_EPS_SHARE = limit("adam-eps-dominated", "share")


@dataclass
class Ratios:
    update_ratio: dict[str, float]  # group → median ratio
    update_ratio_max: dict[str, float]
    adam_share: dict[str, float]  # "group N" → median share of v̂ < eps²
    adam_eps: dict[str, float]
    records: int
    steps: list[int]
    trace: dict[str, list[float]]  # group → ratio per recorded step (for plots)


def ratios(full_records: list[dict[str, Any]]) -> Ratios | None:
    if not full_records:
        return None
    per: dict[str, list[float]] = {}
    adam: dict[str, list[float]] = {}
    eps: dict[str, float] = {}
    steps = []
    for rec in full_records:
        steps.append(int(rec.get("step", -1)))
        groups = rec.get("groups")
        for g, v in (groups if isinstance(groups, dict) else {}).items():
            try:
                ratio = float(v["update_norm"]) / float(v["param_norm"])
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                ratio = float("nan")
            per.setdefault(g, []).append(ratio)
        adam_recs = rec.get("adam")
        for a in adam_recs if isinstance(adam_recs, list) else ():
            if not isinstance(a, dict):
                continue
            key = f"group {a.get('group', 0)}"
            try:
                adam.setdefault(key, []).append(float(a["frac_v_below_eps2"]))
                eps[key] = float(a.get("eps", float("nan")))
            except (KeyError, TypeError, ValueError):
                continue
    med = {g: float(np.nanmedian(v)) for g, v in per.items() if np.isfinite(v).any()}
    mx = {g: float(np.nanmax(v)) for g, v in per.items() if np.isfinite(v).any()}
    share = {g: float(np.median(v)) for g, v in adam.items() if v}
    return Ratios(
        update_ratio=med,
        update_ratio_max=mx,
        adam_share=share,
        adam_eps=eps,
        records=len(full_records),
        steps=steps,
        trace=per,
    )
