"""Gradient clipping: every `clip_grad_norm_` call, its returned total norm, and whether it ran
after `scaler.unscale_` (clipping loss-scaled gradients clips at max_norm × scale: clip-before-unscale).

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

    patch(torch.nn.utils.clip_grad, "clip_grad_norm_", make)
    patch(torch.nn.utils, "clip_grad_norm_", make)
    patch(torch.nn.utils, "clip_grads_with_norm_", make_with_norm)
