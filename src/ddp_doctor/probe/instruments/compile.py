"""torch.compile wrapping: what was compiled, with which backend/mode, and in which order with DDP.

`torch.compile` is wrapped (`nn.Module.compile` goes through it too). A target that already is a
DDP model is `after_ddp`; otherwise the record waits until the first optimizer step, by which
time a DDP wrapping of the compiled module (`before_ddp`) would have been seen, else `no_ddp`.
Both orders work on torch 2.13 (docs/probe.md, measured facts); the record lets the report say which one ran.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from ddp_doctor.probe.instruments import data, gradsync
from ddp_doctor.probe.state import PROBE, guarded, patch

_waiting: list[dict[str, Any]] = []


def _target(model: Any) -> Any:
    return getattr(model, "__self__", model)  # Module.compile passes the bound `_call_impl`


def _library_function(target: Any) -> bool:
    """A plain function defined in an installed package: a library compiling its own kernels at
    import (DeepSpeed decorates optimizer helpers with torch.compile), not the user's model."""
    if isinstance(target, torch.nn.Module):
        return False
    module = sys.modules.get(getattr(target, "__module__", None) or "")
    path = getattr(module, "__file__", None) or ""
    return any(part in ("site-packages", "dist-packages") for part in Path(path).parts)


@guarded("compile")
def _compiled(model: Any, out: Any, kwargs: dict[str, Any]) -> None:
    target = _target(model)
    if _library_function(target):
        return
    backend = kwargs.get("backend", "inductor")
    record = {
        "kind": "config",
        "what": "compile",
        "step": PROBE.step_index(),
        "target": type(target).__name__
        if isinstance(target, torch.nn.Module)
        else getattr(target, "__name__", "function"),
        "backend": backend if isinstance(backend, str) else getattr(backend, "__name__", str(backend)),
        "mode": kwargs.get("mode"),
    }
    if isinstance(target, torch.nn.Module):
        # A watched model's hooks must not run inside the compiled frame (graph breaks):
        # they move to the compiled wrapper, or go (in-place `Module.compile`).
        compiled = out if isinstance(out, torch.nn.Module) else None
        data.move_hooks(target, compiled)
        if isinstance(target, DistributedDataParallel):
            gradsync.move_hooks(target, compiled)
    if isinstance(target, DistributedDataParallel):
        PROBE.emit({**record, "order": "after_ddp"})
    else:
        # Weak references: the probe must not keep the user's modules alive (nor, through them,
        # their process groups and pending work) past the step that used them.
        _waiting.append({**record, "_out": _weak(out), "_target": _weak(target)})


def _weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:  # not weak-referenceable (rare callables): keep nothing, never match
        return lambda: None


@guarded("compile")
def wrapped_by_ddp(module: Any) -> None:
    for record in list(_waiting):
        if module is record["_out"]() or module is record["_target"]():
            _waiting.remove(record)
            PROBE.emit({k: v for k, v in record.items() if not k.startswith("_")} | {"order": "before_ddp"})


@guarded("compile")
def flush_waiting() -> None:
    while _waiting:
        record = _waiting.pop(0)
        PROBE.emit({k: v for k, v in record.items() if not k.startswith("_")} | {"order": "no_ddp"})


def release() -> None:
    _waiting.clear()


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def compile(model: Any = None, **kwargs: Any) -> Any:
            out = original(model, **kwargs)
            # `compile=off` (an intervention) makes torch.compile return its input: nothing compiled.
            if model is not None and out is not model:
                _compiled(model, out, kwargs)
            return out

        return compile

    patch(torch, "compile", make)
