"""Gradient clipping: every `clip_grad_norm_` call, its returned total norm, and whether it ran
after `scaler.unscale_` (clipping loss-scaled gradients clips at max_norm × scale: clip-before-unscale).

Clipping by value (`clip_grad_value_`: Fabric's `clip_gradients(clip_val=...)`, Lightning's
`gradient_clip_algorithm="value"`) is recorded too, with `clip_value` instead of `max_norm`: the
largest |gradient| before clipping (`max_abs`; clipping changed the gradient iff it exceeds
`clip_value`) and the gradient's L2 norm before (`total_norm`) and after (`clipped_norm`). Three
norm passes over the gradients, only in programs that clip by value; on this rank's gradients
(its shards under FSDP2).

`torch.nn.utils.clip_grad_norm_` is looked up at call time by user code and HF Trainer, so
replacing the attribute (on both `torch.nn.utils` and its `clip_grad` module) sees them. accelerate
computes `get_total_norm` itself and then calls the public `torch.nn.utils.clip_grads_with_norm_`,
which is wrapped too (`clip_grad_norm_` calls the private alias, so nothing is counted twice).
The total norm stays a tensor until the optimizer step. Under FSDP2 it is a partial DTensor: see
`_clipped` (recorded per rank as `total_norm_shard`, combined by the analysis).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.utils
import torch.nn.utils.clip_grad

from ddp_doctor.probe.state import PROBE, guarded, patch
from ddp_doctor.probe.steps import is_partial, local

_INF = float("inf")


@guarded("clip")
def _clipped(args: tuple[Any, ...], kwargs: dict[str, Any], total: Any) -> None:
    max_norm = args[1] if len(args) > 1 else kwargs.get("max_norm")
    if total is None:  # clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
        total = args[2] if len(args) > 2 else kwargs.get("total_norm")
    steps = PROBE.steps
    entry: dict[str, Any] = {
        "max_norm": float(max_norm) if max_norm is not None else None,
        "total_norm": total.detach() if isinstance(total, torch.Tensor) else total,
        "after_unscale": steps.unscaled,
        "scaler": steps.scaler_seen,
    }
    norm_type = _partial_norm_type(total)
    if norm_type is not None:
        # FSDP2 (DTensor gradients): the total norm is a partial DTensor whose local value is the
        # p-norm of this rank's shards. No collective here: it is recorded per rank and the
        # analysis combines ranks as (sum of shard^p)^(1/p) (max for p = inf); total_norm is null.
        entry["total_norm"] = None
        entry["total_norm_shard"] = local(total).detach()
        entry["norm_type"] = norm_type
    PROBE.steps.clip.append(entry)
    if "torch.distributed.fsdp" in sys.modules:  # on an FSDP1 model this clips by the shard's norm
        from ddp_doctor.probe.instruments import fsdp1

        if not fsdp1.in_fsdp_clip():
            fsdp1.clip_called(fsdp1.TORCH_CLIP)


def _partial_norm_type(total: Any) -> float | None:
    """p when `total` is a DTensor partial p-norm (torch's _NormPartial placement), else None."""
    if not isinstance(total, torch.Tensor) or not is_partial(total):
        return None
    types = {getattr(p, "norm_type", None) for p in total.placements if not p.is_replicate()}
    norm = next(iter(types)) if len(types) == 1 else None
    return float(norm) if isinstance(norm, (int, float)) else None


def _grads(parameters: Any) -> list[torch.Tensor]:
    params = [parameters] if isinstance(parameters, torch.Tensor) else parameters
    return [local(p.grad).detach() for p in params if p.grad is not None]


@guarded("clip")
def _before_value_clip(parameters: Any) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(max |g|, ‖g‖) before `clip_grad_value_` changes the gradients in place."""
    grads = _grads(parameters)
    if not grads:
        return None
    get_total_norm = torch.nn.utils.get_total_norm
    return get_total_norm(grads, _INF), get_total_norm(grads, 2.0)


@guarded("clip")
def _value_clipped(
    parameters: Any, clip_value: Any, before: tuple[torch.Tensor, torch.Tensor] | None
) -> None:
    steps = PROBE.steps
    entry: dict[str, Any] = {
        "max_norm": None,
        "clip_value": float(clip_value),
        "total_norm": None,
        "after_unscale": steps.unscaled,
        "scaler": steps.scaler_seen,
    }
    if before is not None:
        entry["max_abs"], entry["total_norm"] = before
        entry["clipped_norm"] = torch.nn.utils.get_total_norm(_grads(parameters), 2.0)
    steps.clip.append(entry)


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def clip_grad_norm_(*args: Any, **kwargs: Any) -> Any:
            total = original(*args, **kwargs)
            _clipped(args, kwargs, total)
            return total

        return clip_grad_norm_

    def make_with_norm(original: Callable[..., Any]) -> Callable[..., Any]:
        def clip_grads_with_norm_(*args: Any, **kwargs: Any) -> None:
            original(*args, **kwargs)
            _clipped(args, kwargs, None)

        return clip_grads_with_norm_

    def make_value(original: Callable[..., Any]) -> Callable[..., Any]:
        def clip_grad_value_(parameters: Any, clip_value: Any, *args: Any, **kwargs: Any) -> None:
            if not isinstance(parameters, torch.Tensor):
                parameters = list(parameters)  # a generator (`model.parameters()`) is read twice
            before = _before_value_clip(parameters)
            original(parameters, clip_value, *args, **kwargs)
            _value_clipped(parameters, clip_value, before)

        return clip_grad_value_

    patch(torch.nn.utils.clip_grad, "clip_grad_value_", make_value)
    patch(torch.nn.utils, "clip_grad_value_", make_value)
    patch(torch.nn.utils.clip_grad, "clip_grad_norm_", make)
    patch(torch.nn.utils, "clip_grad_norm_", make)
    patch(torch.nn.utils, "clip_grads_with_norm_", make_with_norm)
