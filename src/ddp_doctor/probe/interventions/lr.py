"""`lr.scale` / `warmup`: each optimizer step runs with lr × scale × min(1, (k+1)/N).

The pre-step hook multiplies each group's lr (k = this optimizer's step count) and the post-step
hook restores the original value, so LR schedulers read and write their own, unscaled lr. Both
keys share the two hooks, so together they scale once by the product.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from ddp_doctor.probe.interventions.base import EFFECTS, Intervention, positive_float, positive_int

SCALE, WARMUP = "lr.scale", "warmup"

# Per optimizer (weakly held: never keeps the user's optimizer alive): steps taken, lrs to restore.
_steps: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_saved: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


def _factor(optimizer: Any, values: Mapping[str, object]) -> float:
    factor = float(values.get(SCALE, 1.0))  # type: ignore[arg-type]
    warmup = values.get(WARMUP)
    if warmup is not None:
        factor *= min(1.0, (_steps.get(optimizer, 0) + 1) / int(warmup))  # type: ignore[call-overload]
    return factor


def _restore(optimizer: Any) -> None:
    saved = _saved.pop(optimizer, None)
    if saved is not None and len(saved) == len(optimizer.param_groups):
        for group, lr in zip(optimizer.param_groups, saved, strict=True):
            group["lr"] = lr


def _scale(optimizer: Any, values: Mapping[str, object]) -> None:
    _restore(optimizer)  # a previous step that raised never restored its lrs
    factor = _factor(optimizer, values)
    _saved[optimizer] = [group["lr"] for group in optimizer.param_groups]
    if factor != 1.0:
        for group in optimizer.param_groups:
            group["lr"] = group["lr"] * factor
    for key in (SCALE, WARMUP):
        if key in values:
            EFFECTS[key] += 1


def _unscale(optimizer: Any, values: Mapping[str, object]) -> None:
    _restore(optimizer)
    _steps[optimizer] = _steps.get(optimizer, 0) + 1


INTERVENTIONS = (
    Intervention(
        SCALE,
        "float > 0",
        positive_float,
        "each optimizer step runs with lr × scale; restored after the step, so schedulers keep their "
        "own state.",
        "lr.scale=0.1",
        pre_step=_scale,
        post_step=_unscale,
    ),
    Intervention(
        WARMUP,
        "int ≥ 1",
        positive_int,
        "optimizer step k runs with lr × min(1, (k+1)/N) (combines with `lr.scale`).",
        "warmup=100",
        pre_step=_scale,
        post_step=_unscale,
    ),
)
