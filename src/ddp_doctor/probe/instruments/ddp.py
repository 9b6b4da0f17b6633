"""DDP construction: the effective settings (`config`/`ddp` record) and the model to watch.

`DistributedDataParallel.__init__` is wrapped and the values are read from the built object, so
defaults are the effective ones (`broadcast_buffers` defaults to None in torch 2.13; the bucket
size is `bucket_bytes_cap`). HF Trainer builds DDP with find_unused_parameters=True by default.
BatchNorm layers that are not SyncBatchNorm are listed for the batchnorm-unsynced check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
        },
        training=True,
    )
    params.watch(ddp, ddp.module)
    gradsync.watch(ddp)
    data.watch_inputs(ddp)
    from ddp_doctor.probe.instruments import compile as compile_instrument

    compile_instrument.wrapped_by_ddp(module)


def _unwrap(module: Any) -> Any:
    # torch.compile'd modules keep the user's module in `_orig_mod`.
    return getattr(module, "_orig_mod", module)


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            _constructed(self)

        return __init__

    patch(DistributedDataParallel, "__init__", make)
