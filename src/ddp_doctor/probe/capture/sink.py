"""Writes one `logged_loss` record (docs/run-format.md): the one place every capture source ends.

Each record says where the value was seen (`source`, `key`), what it was (`value`, printed
`resolution`), and where the probe was when the script logged it: `step` is the optimizer-step
window that was open (= optimizer steps completed so far) and `micro` the backward calls already
made in it, so the analysis can line the value up with what the probe measured — a value logged
right after `optimizer.step()` has ``micro == 0`` and refers to window ``step - 1``.

A chatty script cannot flood the rank file: at most MAX_PER_WINDOW records per (source, window).
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

from ddp_doctor.probe.capture.patterns import float_resolution
from ddp_doctor.probe.state import PROBE

MAX_PER_WINDOW = 64
MAX_PENDING_COPIES = 256  # device values waiting for their host copy; more are dropped

_pending: list[tuple[Any, Any, dict[str, Any]]] = []  # (cuda event, host tensor, record fields)

_counts: dict[str, tuple[int, int]] = {}  # source -> (window, records written in it)


def position() -> tuple[int, int]:
    """(optimizer-step window, backward calls made in it) at this moment."""
    steps = PROBE.steps
    if steps is None:
        return 0, 0
    return steps.step, len(steps.micros)


def emit(
    source: str,
    key: str,
    value: float,
    resolution: float | None = None,
    user_step: int | None = None,
    reduce: str | None = None,
    at: tuple[int, int] | None = None,
) -> None:
    """Record one logged loss value; callers run inside `guarded` (errors disable their source)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    step, micro = position() if at is None else at
    window, count = _counts.get(source, (-1, 0))
    count = count + 1 if window == step else 1
    _counts[source] = (step, count)
    if count > MAX_PER_WINDOW:
        return
    value = float(value)
    record: dict[str, Any] = {
        "kind": "logged_loss",
        "step": step,
        "micro": micro,
        "source": source,
        "key": _key(str(key)[:120]),
        "value": value,
        "resolution": float_resolution(value) if resolution is None else resolution,
        "rank": _rank(),
    }
    if user_step is not None:
        record["user_step"] = int(user_step)
    if reduce is not None:
        record["reduce"] = reduce
    if not math.isfinite(value):
        record["resolution"] = 0.0
    PROBE.emit(record)


def emit_value(source: str, key: str, value: Any, reduce: str | None = None) -> None:
    """Record a value handed to a logging library: a number, or a one-element tensor.

    A CUDA tensor is copied to the host asynchronously and recorded once the copy has finished
    (checked without waiting at the next call, waited for at exit): reading it at once would
    synchronise the device on every logging call.
    """
    flush()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        emit(source, key, value, reduce=reduce)
        return
    import torch

    if not isinstance(value, torch.Tensor) or value.numel() != 1 or value.is_complex():
        return
    tensor = value.detach().reshape(())
    if tensor.device.type != "cuda":
        emit(source, key, float(tensor), reduce=reduce)
        return
    if len(_pending) >= MAX_PENDING_COPIES:
        return
    host = tensor.to("cpu", torch.float64, non_blocking=True)
    event = torch.cuda.Event()
    event.record()
    step, micro = position()
    _pending.append((event, host, dict(source=source, key=key, reduce=reduce, at=(step, micro))))


def flush(wait: bool = False) -> None:
    """Record the pending device values whose copy to the host has finished (all, when `wait`)."""
    while _pending:
        event, host, meta = _pending[0]
        if wait:
            event.synchronize()
        elif not event.query():
            return
        _pending.pop(0)
        emit(meta["source"], meta["key"], float(host), reduce=meta["reduce"], at=meta["at"])


_rank_cache: list[int] = []  # the process group's rank, once it exists (it does not change)


@functools.lru_cache(maxsize=256)
def _key(key: str) -> str:
    """The logged key, redacted (a script may log `f"loss {api_key}"`): once per distinct key."""
    from ddp_doctor.core.redact import redact_recorded

    return redact_recorded(key)


def _rank() -> int:
    if _rank_cache:
        return _rank_cache[0]
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        _rank_cache.append(dist.get_rank())
        return _rank_cache[0]
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0
