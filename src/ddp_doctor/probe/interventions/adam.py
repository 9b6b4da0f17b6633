"""`adam.eps` / `adam.beta2`: every Adam-style optimizer uses this eps / beta2.

Two places, so the recorded optimizer config shows the effective value and nothing escapes: a
keyword override in ``Adam``/``AdamW.__init__``, and a step pre-hook that sets it in every param
group holding ``eps``/``betas`` (groups added later, other Adam-style classes).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ddp_doctor.probe.interventions.base import (
    EFFECTS,
    TAG,
    Intervention,
    guard_name,
    open_unit_float,
    positive_float,
)
from ddp_doctor.probe.state import guarded, patch

EPS, BETA2 = "adam.eps", "adam.beta2"
# The values applied in this process (set by `_apply` before it patches, read by the patch).
_VALUES: dict[str, object] = {}


@guarded(guard_name("adam"), everywhere=True)
def _overridden(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The constructor's arguments with eps/betas replaced, or None (then the call is left alone)."""
    call = dict(signature.bind_partial(*args, **kwargs).arguments)
    self = call.pop("self")
    if EPS in _VALUES:
        call["eps"] = _VALUES[EPS]
        EFFECTS[EPS] += 1
    if BETA2 in _VALUES:
        beta1 = call.get("betas", (0.9, 0.999))[0]
        call["betas"] = (beta1, _VALUES[BETA2])
        EFFECTS[BETA2] += 1
    return self, call


def _apply(key: str) -> Any:
    def apply(value: object) -> None:
        import torch

        _VALUES[key] = value
        for cls in (torch.optim.Adam, torch.optim.AdamW):

            def make(original: Any) -> Any:
                signature = inspect.signature(original)

                def init(*args: Any, **kwargs: Any) -> Any:
                    bound = _overridden(signature, args, kwargs)
                    if bound is None:
                        return original(*args, **kwargs)
                    self, call = bound
                    return original(self, **call)

                return init

            patch(cls, "__init__", make, tag=TAG)

    return apply


def _set_groups(optimizer: Any, values: Mapping[str, object]) -> None:
    for group in optimizer.param_groups:
        if EPS in values and "eps" in group and group["eps"] != values[EPS]:
            group["eps"] = values[EPS]
            EFFECTS[EPS] += 1
        betas = group.get("betas")
        if (
            BETA2 in values
            and isinstance(betas, (tuple, list))
            and len(betas) == 2
            and betas[1] != values[BETA2]
        ):
            group["betas"] = (betas[0], values[BETA2])
            EFFECTS[BETA2] += 1


INTERVENTIONS = (
    Intervention(
        EPS,
        "float > 0",
        positive_float,
        "every Adam/AdamW-style optimizer uses this eps (`__init__` override + every param group with "
        "`eps`, at each step).",
        "adam.eps=1e-10",
        apply=_apply(EPS),
        pre_step=_set_groups,
    ),
    Intervention(
        BETA2,
        "0 < x < 1",
        open_unit_float,
        "the same for beta2 (beta1 kept).",
        "adam.beta2=0.95",
        apply=_apply(BETA2),
        pre_step=_set_groups,
    ),
)
