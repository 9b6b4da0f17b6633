"""Process-group creation (`config`/`dist`) and autocast contexts (`config`/`autocast`).

`init_process_group` proves this process is a training rank, so it opens the rank file (which
then carries the real rank and backend in its header). Each distinct autocast (device, dtype)
entered is recorded once; the dtype of the latest one is also put on every step record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from ddp_doctor.probe.state import PROBE, guarded, patch

_autocasts: set[tuple[str, str]] = set()


@guarded("config")
def dist_ready() -> None:
    if not (dist.is_available() and dist.is_initialized()):
        return
    PROBE.emit(
        {
            "kind": "config",
            "what": "dist",
            "step": PROBE.step_index(),
            "backend": str(dist.get_backend()),
            "world_size": dist.get_world_size(),
            "rank": dist.get_rank(),
        },
        training=True,
    )


@guarded("config")
def _autocast_entered(ctx: Any) -> None:
    if torch.compiler.is_compiling() or not getattr(ctx, "_enabled", False):
        return
    dtype = str(ctx.fast_dtype).removeprefix("torch.")
    PROBE.steps.autocast = dtype
    key = (ctx.device, dtype)
    if key not in _autocasts:
        _autocasts.add(key)
        PROBE.emit(
            {
                "kind": "config",
                "what": "autocast",
                "step": PROBE.step_index(),
                "dtype": dtype,
                "device_type": ctx.device,
            }
        )


def install() -> None:
    def make_init(original: Callable[..., Any]) -> Callable[..., Any]:
        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            dist_ready()
            return out

        return init_process_group

    def make_enter(original: Callable[..., Any]) -> Callable[..., Any]:
        def __enter__(self: Any) -> Any:
            out = original(self)
            _autocast_entered(self)
            return out

        return __enter__

    patch(dist, "init_process_group", make_init)
    patch(torch.distributed.distributed_c10d, "init_process_group", make_init)
    patch(torch.amp.autocast_mode.autocast, "__enter__", make_enter)
