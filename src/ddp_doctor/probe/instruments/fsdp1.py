"""FSDP1 (`FullyShardedDataParallel`) and HSDP: settings, sync pattern, gradient norms, clipping.

Installed only once the program imports `torch.distributed.fsdp` (attach.py). Observed through
FSDP1's own functions, without a collective of ours and without touching a value:

* `FullyShardedDataParallel.__init__` (outermost call only: an auto-wrap policy constructs the
  inner units inside it): the model to watch; at the first gradient reduction a `config`/`fsdp`
  record with `version: 1`, the sharding strategy, `shard_group_size` (ranks one gradient is
  sharded over: the world for FULL_SHARD/SHARD_GRAD_OP, the node's group for HYBRID_SHARD (HSDP),
  1 for NO_SHARD) and `replicas` = world size / shard_group_size.
* `_runtime_utils._reduce_grad(state, handle)`: called once per FSDP unit on every micro-step
  whose gradients are synchronised (`no_sync()` skips it), with `handle.flat_param.grad` holding
  this rank's LOCAL unsharded gradient, accumulated since the last sync, before FSDP's
  pre-division: ‖·‖² goes to `grad_sq_local`. It then reduce-scatters (and for HSDP all-reduces
  across replicas) and hands this rank's shard of the averaged GLOBAL gradient to
  `_accumulate_sharded_grad(state, handle, sharded_grad)`, whose ‖·‖² goes to `grad_sq_global`.
  The full gradient's squared norm is the sum of the shards over the ranks of one replica, i.e.
  Σ_ranks grad_sq_global / replicas (analysis/quantities/sharding.py).
* `_reduce_grad_no_shard` (NO_SHARD): local norm before its all-reduce, global norm after.
* The record also carries the `MixedPrecision` policy (`param_dtype`, `reduce_dtype`,
  `buffer_dtype`, `keep_low_precision_grads`, `cast_forward_inputs`; issue 25 d).
* `FullyShardedDataParallel.clip_grad_norm_` (the correct FSDP1 clip: it all-reduces the shard
  norms) is recorded like `torch.nn.utils.clip_grad_norm_`; a `config`/`fsdp_clip` record names
  each clip function used on an FSDP1 run once, so the analysis can tell the correct method from
  `torch.nn.utils.clip_grad_norm_` on sharded parameters (each rank clips by its shard's norm).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel, _runtime_utils

from ddp_doctor.probe.instruments import data, params
from ddp_doctor.probe.state import PROBE, Nesting, guarded, patch
from ddp_doctor.probe.steps import sq_norm

FSDP_METHOD = "FullyShardedDataParallel.clip_grad_norm_"
TORCH_CLIP = "torch.nn.utils.clip_grad_norm_"

_nesting = Nesting()
_roots: list[weakref.ref[FullyShardedDataParallel]] = []
_emitted = False
_clip_functions: set[str] = set()


def active() -> bool:
    """An FSDP1 model exists in this process (torch.nn.utils clips then act on its shards)."""
    return any(ref() is not None for ref in _roots)


def _contains(outer: torch.nn.Module, inner: Any) -> bool:
    return inner is not None and any(m is inner for m in outer.modules())


@guarded("fsdp1")
def _constructed(model: FullyShardedDataParallel) -> None:
    PROBE.mark_training()
    _roots[:] = [ref for ref in _roots if ref() is not None and not _contains(model, ref())]
    _roots.append(weakref.ref(model))
    PROBE.models = [ref for ref in PROBE.models if not _contains(model, ref())]
    params.watch(model, model)
    data.watch_inputs(model)


def _dtype(value: Any) -> str | None:
    return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else None


@guarded("fsdp1")
def _emit_config() -> None:
    global _emitted
    if _emitted:
        return
    _emitted = True
    world = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    for model in (ref() for ref in _roots):
        if model is None:
            continue
        strategy = getattr(model, "sharding_strategy", None)
        name = getattr(strategy, "name", str(strategy))
        group = getattr(model, "process_group", None)
        shard = 1 if name == "NO_SHARD" else (dist.get_world_size(group) if group is not None else world)
        mp = getattr(model, "mixed_precision", None)
        PROBE.emit(
            {
                "kind": "config",
                "what": "fsdp",
                "step": PROBE.step_index(),
                "version": 1,
                "module": type(model.module).__name__,
                "n_params": sum(1 for _ in model.module.parameters()),
                "sharding_strategy": name,
                "hsdp": name.startswith(("HYBRID_SHARD", "_HYBRID_SHARD")),
                "shard_group_size": shard,
                "replicas": max(world // max(shard, 1), 1),
                # which shard this rank holds: replica checksums compare only ranks with the same
                # shard (a local query of the shard group, no collective)
                "shard_rank": 0 if shard == 1 else (dist.get_rank(group) if group is not None else rank),
                "use_orig_params": bool(getattr(model, "_use_orig_params", False)),
                "cpu_offload": bool(getattr(getattr(model, "cpu_offload", None), "offload_params", False)),
                "param_dtype": _dtype(getattr(mp, "param_dtype", None)),
                "reduce_dtype": _dtype(getattr(mp, "reduce_dtype", None)),
                "buffer_dtype": _dtype(getattr(mp, "buffer_dtype", None)),
                "keep_low_precision_grads": bool(getattr(mp, "keep_low_precision_grads", False)),
                "cast_forward_inputs": bool(getattr(mp, "cast_forward_inputs", False)),
            },
            training=True,
        )


@guarded("fsdp1")
def _before_reduce(handle: Any) -> None:
    _emit_config()
    micro = PROBE.steps.current
    grad = handle.flat_param.grad
    if micro is None or grad is None:
        return
    micro.sync += 1
    micro.local.append((len(micro.local), sq_norm(grad)))


@guarded("fsdp1")
def _reduced(tensor: torch.Tensor | None) -> None:
    micro = PROBE.steps.current
    if micro is not None and tensor is not None:
        micro.global_.append(sq_norm(tensor))


@guarded("fsdp1")
def clip_called(function: str) -> None:
    """Name each clip function used on an FSDP1 run once (`config`/`fsdp_clip`)."""
    if function in _clip_functions or not active():
        return
    _clip_functions.add(function)
    PROBE.emit(
        {"kind": "config", "what": "fsdp_clip", "step": PROBE.step_index(), "function": function},
        training=True,
    )


@guarded("fsdp1")
def _method_clipped(max_norm: Any, total: Any) -> None:
    clip_called(FSDP_METHOD)
    PROBE.steps.clip.append(
        {
            "max_norm": float(max_norm) if max_norm is not None else None,
            "total_norm": total.detach() if isinstance(total, torch.Tensor) else total,
            "after_unscale": PROBE.steps.unscaled,
            "scaler": PROBE.steps.scaler_seen,
        }
    )


def in_fsdp_clip() -> bool:
    """True inside FullyShardedDataParallel.clip_grad_norm_ (its own norm is all-reduced)."""
    return _clip_nesting_depth[0] > 0


_clip_nesting_depth = [0]


def install() -> None:
    def make_init(original: Callable[..., Any]) -> Callable[..., Any]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            with _nesting.enter() as outer:
                original(self, *args, **kwargs)
                if outer:
                    _constructed(self)

        return __init__

    def make_reduce(original: Callable[..., Any]) -> Callable[..., Any]:
        def _reduce_grad(state: Any, handle: Any) -> Any:
            _before_reduce(handle)
            return original(state, handle)

        return _reduce_grad

    def make_accumulate(original: Callable[..., Any]) -> Callable[..., Any]:
        def _accumulate_sharded_grad(state: Any, handle: Any, sharded_grad: torch.Tensor) -> Any:
            _reduced(sharded_grad)  # this rank's shard of the averaged gradient of this micro-step
            return original(state, handle, sharded_grad)

        return _accumulate_sharded_grad

    def make_no_shard(original: Callable[..., Any]) -> Callable[..., Any]:
        def _reduce_grad_no_shard(state: Any, handle: Any) -> Any:
            _before_reduce(handle)
            out = original(state, handle)
            _reduced(handle.flat_param.grad)
            return out

        return _reduce_grad_no_shard

    def make_clip(original: Callable[..., Any]) -> Callable[..., Any]:
        def clip_grad_norm_(self: Any, max_norm: Any, *args: Any, **kwargs: Any) -> Any:
            _clip_nesting_depth[0] += 1
            try:
                total = original(self, max_norm, *args, **kwargs)
            finally:
                _clip_nesting_depth[0] -= 1
            _method_clipped(max_norm, total)
            return total

        return clip_grad_norm_

    patch(FullyShardedDataParallel, "__init__", make_init)
    patch(FullyShardedDataParallel, "clip_grad_norm_", make_clip)
    patch(_runtime_utils, "_reduce_grad", make_reduce)
    patch(_runtime_utils, "_accumulate_sharded_grad", make_accumulate)
    patch(_runtime_utils, "_reduce_grad_no_shard", make_no_shard)
