"""FSDP2 (`fully_shard`): settings, sync pattern and gradient norms from the reduce-scatter.

`DefaultReduceScatter.__call__` receives the flattened LOCAL gradient (input) and returns this
rank's shard of the averaged GLOBAL gradient (output); for float32/bfloat16 gradients FSDP2 uses
ReduceOp.AVG without pre-division, so the input is the raw local gradient. `grad_sq_global` is
the squared norm of this rank's shard only: the analysis sums shards over ranks (run-format.md).
One call per FSDP parameter group per synced micro-step gives the sync pattern
(`set_requires_gradient_sync(False)` skips it). FSDP1 is recorded as not observed.

The `config`/`fsdp` record carries the sharding and mixed-precision policy (issue 25 d): the
`reshard_after_forward` the script passed, and each FSDP module's `MixedPrecisionPolicy`
(`param_dtype`, `reduce_dtype`, `output_dtype`, `cast_forward_inputs`) read from its FSDP state:
the root's as `mp_policy`, and `mp_policies` = how many distinct policies the modules use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed.fsdp as fsdp_api
from torch.distributed.fsdp._fully_shard import _fsdp_collectives, _fully_shard

from ddp_doctor.probe.instruments import data, params
from ddp_doctor.probe.state import PROBE, guarded, patch
from ddp_doctor.probe.steps import sq_norm

_settings: dict[str, Any] = {}


@guarded("fsdp")
def _sharded(module: torch.nn.Module, kwargs: dict[str, Any]) -> None:
    if not PROBE.fsdp:
        PROBE.fsdp = True
        PROBE.mark_training()
    data.watch_inputs(module)
    # The root is the last module sharded in the usual bottom-up order; keep one entry per model.
    PROBE.models = [ref for ref in PROBE.models if not _contains(module, ref())]
    params.watch(module, module)
    _settings["reshard_after_forward"] = kwargs.get(
        "reshard_after_forward", _settings.get("reshard_after_forward")
    )


def _dtype(value: Any) -> str | None:
    return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else None


def mp_policy(module: torch.nn.Module) -> dict[str, Any] | None:
    """A fully_shard'ed module's MixedPrecisionPolicy as plain values (None when it has no FSDP state)."""
    get_state = getattr(module, "_get_fsdp_state", None)
    policy = getattr(get_state(), "_mp_policy", None) if callable(get_state) else None
    if policy is None:
        return None
    return {
        "param_dtype": _dtype(getattr(policy, "param_dtype", None)),
        "reduce_dtype": _dtype(getattr(policy, "reduce_dtype", None)),
        "output_dtype": _dtype(getattr(policy, "output_dtype", None)),
        "cast_forward_inputs": bool(getattr(policy, "cast_forward_inputs", True)),
    }


@guarded("fsdp")
def emit_config() -> None:
    """One `config`/`fsdp` record per sharded model, at the first optimizer step (sharding is done)."""
    if not PROBE.fsdp:
        return
    for model in PROBE.watched_models():
        policies = [mp_policy(m) for m in model.modules()]
        distinct = {tuple(sorted(p.items())) for p in policies if p is not None}
        PROBE.emit(
            {
                "kind": "config",
                "what": "fsdp",
                "step": PROBE.step_index(),
                "version": 2,
                "module": type(model).__name__,
                "n_params": sum(1 for _ in model.parameters()),
                "reshard_after_forward": _settings.get("reshard_after_forward"),
                "mp_policy": mp_policy(model),
                "mp_policies": len(distinct),
            }
        )


def _contains(outer: torch.nn.Module, inner: Any) -> bool:
    return inner is not None and any(m is inner for m in outer.modules())


@guarded("fsdp")
def _before_reduce(input_tensor: torch.Tensor) -> Any:
    micro = PROBE.steps.current
    if micro is None:
        return None
    micro.sync += 1
    micro.local.append((len(micro.local), sq_norm(input_tensor)))
    return micro


@guarded("fsdp")
def _after_reduce(micro: Any, output_tensor: torch.Tensor) -> None:
    micro.global_.append(sq_norm(output_tensor))


def install() -> None:
    def make_shard(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def fully_shard(module: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(module, *args, **kwargs)
            if isinstance(module, torch.nn.Module):
                _sharded(module, kwargs)
            return out

        return fully_shard

    def make_reduce(original: Callable[..., Any]) -> Callable[..., Any]:
        def __call__(
            self: Any, output_tensor: torch.Tensor, input_tensor: torch.Tensor, *args: Any, **kwargs: Any
        ) -> Any:
            micro = _before_reduce(input_tensor)
            work = original(self, output_tensor, input_tensor, *args, **kwargs)
            if micro is not None and not kwargs.get("async_op"):  # FSDP2 calls it synchronously
                _after_reduce(micro, output_tensor)
            return work

        return __call__

    patch(fsdp_api, "fully_shard", make_shard)
    patch(_fully_shard, "fully_shard", make_shard)
    patch(_fsdp_collectives.DefaultReduceScatter, "__call__", make_reduce)
