"""`clip`: clip the total gradient norm of each optimizer's parameters before its step.

``GradScaler.step`` unscales before calling ``optimizer.step``, so the pre-step hook sees true
gradients; optimizers that unscale inside their own step (fused, ``_step_supports_amp_scaling``)
carry ``grad_scale`` and the threshold is multiplied by it instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddp_doctor.probe.interventions.base import EFFECTS, Intervention, positive_float

KEY = "clip"


def _clip(optimizer: Any, values: Mapping[str, object]) -> None:
    import torch

    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if not params:
        return
    max_norm = float(values[KEY])  # type: ignore[arg-type]
    grad_scale = getattr(optimizer, "grad_scale", None)  # fused optimizers unscale inside step
    if grad_scale is not None:
        max_norm *= float(grad_scale)
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    EFFECTS[KEY] += 1


INTERVENTIONS = (
    Intervention(
        KEY,
        "float > 0",
        positive_float,
        "before each optimizer step, `clip_grad_norm_` over the optimizer's parameters — after "
        "GradScaler's unscale (`scaler.step` unscales before calling `optimizer.step`); fused optimizers "
        "that unscale inside `step` get max_norm × their `grad_scale`.",
        "clip=1.0",
        pre_step=_clip,
    ),
)
