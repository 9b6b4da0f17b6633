"""DDP construction: the effective settings (`config`/`ddp` record) and the model to watch.

`DistributedDataParallel.__init__` is wrapped and the values are read from the built object, so
defaults are the effective ones (`broadcast_buffers` defaults to None in torch 2.13; the bucket
size is `bucket_bytes_cap`). HF Trainer builds DDP with find_unused_parameters=True by default.
BatchNorm layers that are not SyncBatchNorm are listed for the batchnorm-unsynced check.

Precision policy (issue 25 d): DDP's own `mixed_precision` (param/reduce/buffer dtypes) is in the
record, and `register_comm_hook` is wrapped: a `config`/`ddp_comm_hook` record names each hook and
the dtype it reduces gradients in (`fp16_compress_hook` float16, `bf16_compress_hook` bfloat16 and
their `_wrapper` forms; null for other hooks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules.batchnorm import SyncBatchNorm, _BatchNorm
from torch.nn.parallel import DistributedDataParallel

from ddp_doctor.probe.instruments import data, gradsync, params
from ddp_doctor.probe.state import PROBE, guarded, patch

MIB = 1024 * 1024


@guarded("ddp")
def _constructed(ddp: DistributedDataParallel) -> None:
    module = ddp.module
    trainable = [p for p in module.parameters() if p.requires_grad]
    batchnorm = [
        name
        for name, m in module.named_modules()
        if isinstance(m, _BatchNorm) and not isinstance(m, SyncBatchNorm)
    ]
    PROBE.emit(
        {
            "kind": "config",
            "what": "ddp",
            "step": PROBE.step_index(),
            "module": type(_unwrap(module)).__name__,
            "find_unused_parameters": bool(ddp.find_unused_parameters),
            "bucket_cap_mb": ddp.bucket_bytes_cap / MIB,
            "gradient_as_bucket_view": bool(ddp.gradient_as_bucket_view),
            "static_graph": bool(ddp.static_graph),
            "broadcast_buffers": ddp.broadcast_buffers,
            "n_params": sum(1 for _ in module.parameters()),
            "n_trainable": len(trainable),
            "n_trainable_numel": sum(p.numel() for p in trainable),
            "batchnorm": batchnorm,
            "syncbatchnorm": sum(1 for m in module.modules() if isinstance(m, SyncBatchNorm)),
            "mixed_precision": _mixed_precision(getattr(ddp, "mixed_precision", None)),
        },
        training=True,
    )
    params.watch(ddp, ddp.module)
    gradsync.watch(ddp)
    data.watch_inputs(ddp)
    from ddp_doctor.probe.instruments import compile as compile_instrument

    compile_instrument.wrapped_by_ddp(module)


def _dtype(value: Any) -> str | None:
    return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else None


def _mixed_precision(mp: Any) -> dict[str, Any] | None:
    if mp is None:
        return None
    return {k: _dtype(getattr(mp, k, None)) for k in ("param_dtype", "reduce_dtype", "buffer_dtype")}


def hook_reduce_dtype(name: str) -> str | None:
    """The dtype a DDP comm hook all-reduces gradients in, from its name (None: not a compression hook)."""
    if "bf16_compress" in name:
        return "bfloat16"
    if "fp16_compress" in name:
        return "float16"
    return None


@guarded("ddp")
def _hook_registered(hook: Any) -> None:
    module = str(getattr(hook, "__module__", "") or "")
    qualname = str(
        getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or type(hook).__name__
    )
    name = f"{module}.{qualname}" if module else qualname
    PROBE.emit(
        {
            "kind": "config",
            "what": "ddp_comm_hook",
            "step": PROBE.step_index(),
            "hook": name,
            "reduce_dtype": hook_reduce_dtype(qualname),
        }
    )


def _unwrap(module: Any) -> Any:
    # torch.compile'd modules keep the user's module in `_orig_mod`.
    return getattr(module, "_orig_mod", module)


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            _constructed(self)

        return __init__

    def make_hook(original: Callable[..., Any]) -> Callable[..., Any]:
        def register_comm_hook(self: Any, state: object, hook: Callable[..., Any]) -> None:
            original(self, state, hook)
            _hook_registered(hook)

        return register_comm_hook

    patch(DistributedDataParallel, "__init__", make)
    patch(DistributedDataParallel, "register_comm_hook", make_hook)
