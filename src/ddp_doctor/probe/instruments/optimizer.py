"""Optimizer steps: they close the step window; lr per group; hyper-parameters; zero_grad calls.

The global hooks `register_optimizer_step_pre_hook/post_hook` fire for every torch optimizer,
including the one inside HF's AcceleratedOptimizer (docs/probe.md, measured facts). The first optimizer that steps
is the one that defines step numbers; other optimizers are recorded as configuration only.
`optimizer.step(closure)` (Lightning's automatic optimisation, LBFGS) runs a backward inside the
step: the window then closes when the closure returns (`_closing_closure`), not at the pre-hook.
Backward calls between two steps are the accumulation count. `zero_grad` is counted on
`Optimizer.zero_grad` and `Module.zero_grad` (outermost call only).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from ddp_doctor.probe.instruments import compile as compile_instrument
from ddp_doctor.probe.instruments import (
    dtypes,
    fingerprints,
    full,
    params,
    replicas,
    stepgrads,
    update_sample,
)
from ddp_doctor.probe.state import PROBE, Nesting, guarded, patch

HYPER_PARAMS = ("lr", "eps", "betas", "weight_decay", "momentum")
_configured: weakref.WeakSet[torch.optim.Optimizer] = weakref.WeakSet()
_primary: list[weakref.ref[torch.optim.Optimizer]] = []
_zero_nesting = Nesting()


def _number(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.item() if value.numel() == 1 else value.tolist()
    if isinstance(value, tuple):
        return [_number(v) for v in value]
    return value


def _config(optimizer: torch.optim.Optimizer) -> None:
    groups = []
    for group in optimizer.param_groups:
        entry = {k: _number(group[k]) for k in HYPER_PARAMS if k in group}
        entry["n_params"] = len(group["params"])
        entry["numel"] = sum(p.numel() for p in group["params"])
        groups.append(entry)
    PROBE.emit(
        {
            "kind": "config",
            "what": "optimizer",
            "step": PROBE.step_index(),
            "type": type(optimizer).__name__,
            "groups": groups,
        },
        training=True,
    )


def is_primary(optimizer: torch.optim.Optimizer) -> bool:
    # Once the first optimizer is gone (a second training phase builds a new one), the next
    # optimizer that steps defines the step numbers; they keep counting up.
    if not _primary or _primary[0]() is None:
        _primary[:] = [weakref.ref(optimizer)]
    return _primary[0]() is optimizer


def primary() -> torch.optim.Optimizer | None:
    return _primary[0]() if _primary else None


def lr_of(optimizer: torch.optim.Optimizer) -> list[float]:
    return [float(_number(group["lr"])) for group in optimizer.param_groups]


@guarded("optimizer")
def _pre(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> Any:
    if PROBE.steps.suspended:
        return None
    if optimizer not in _configured:
        _configured.add(optimizer)
        _config(optimizer)
    if not is_primary(optimizer):
        return None
    steps = PROBE.steps
    if steps.pending is not None:
        steps.write_pending()
    closure = args[1] if len(args) > 1 else kwargs.get("closure")
    if not callable(closure):
        _close_window(optimizer)
        return None
    # `optimizer.step(closure)`: the closure runs the step's last forward and backward inside the
    # step (Lightning automatic optimisation also clips there; LBFGS calls it several times).
    # The window closes when the closure's first call returns, before the update, instead of
    # here: closing now would file this step's synced backward as micro-step 0 of the next one.
    steps.closure_open = True
    wrapped = _closing_closure(optimizer, closure)
    if len(args) > 1:
        return (args[0], wrapped, *args[2:]), kwargs
    return args, {**kwargs, "closure": wrapped}


def _close_window(optimizer: torch.optim.Optimizer) -> None:
    """Close the step window just before the update: everything since the previous step."""
    steps = PROBE.steps
    steps.closure_open = False
    if steps.step == 0:
        params.report_unused(optimizer)
        dtypes.first_step(optimizer)
        compile_instrument.flush_waiting()
        if PROBE.fsdp:
            from ddp_doctor.probe.instruments import fsdp

            fsdp.emit_config()
    full.before_step(optimizer, steps.step)
    stepgrads.before_step(optimizer)
    update_sample.before_step(optimizer, steps.step)
    fingerprints.before_step(optimizer, steps.step)
    steps.close(lr_of(optimizer), skipped=False)
    steps.closed_during_scaler_step = True


def _closing_closure(optimizer: torch.optim.Optimizer, closure: Callable[..., Any]) -> Callable[..., Any]:
    """The user's closure, unchanged for the optimizer (arguments, result, exceptions); its first
    return closes the window, and later calls within the same step (LBFGS re-evaluations, line
    search) are not micro-steps."""
    calls = 0

    def closure_then_close(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 1:
            with _reevaluating():
                return closure(*args, **kwargs)
        try:
            return closure(*args, **kwargs)
        finally:
            _closed_by_closure(optimizer)

    return closure_then_close


@guarded("optimizer")
def _closed_by_closure(optimizer: torch.optim.Optimizer) -> None:
    if PROBE.steps.closure_open:
        _close_window(optimizer)


@contextlib.contextmanager
def _reevaluating() -> Iterator[None]:
    steps = PROBE.steps
    if steps is None:
        yield
        return
    steps.reevaluating += 1
    try:
        yield
    finally:
        steps.reevaluating -= 1
        # what the re-evaluation's forward left behind belongs to no micro-step
        steps.forward = steps.loss_fn = None
        steps.loss_fn_calls = 0


@guarded("optimizer")
def _post(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    if PROBE.steps.suspended or not is_primary(optimizer):
        return
    if PROBE.steps.closure_open:  # a closure the optimizer never called
        _close_window(optimizer)
    step = PROBE.steps.step - 1
    if step == 0:
        # again after the first step: written only on change (a backward inside the step, from
        # a closure, ran after the pre-hook; the window has seen it)
        params.report_unused(optimizer)
    full.after_step(optimizer, step)
    update_sample.after_step(step)
    fingerprints.after_step(step)
    if not PROBE.steps.scaler_seen and not PROBE.steps.engine_step:
        finish_step(optimizer)


def finish_step(
    optimizer: torch.optim.Optimizer | None, scale: float | None = None, found_inf: bool | None = None
) -> None:
    """Write the closed step record, then the replica checksum when this step is due."""
    record = PROBE.steps.write_pending(scale, found_inf)
    if record is not None:
        replicas.maybe_checksum(record["step"], optimizer)


@guarded("optimizer")
def _zero_grad() -> None:
    steps = PROBE.steps
    steps.zero_grad += 1
    if steps.micros and not steps.reevaluating:
        steps.zero_grad_after_backward += 1


def install() -> None:
    register_optimizer_step_pre_hook(_pre)
    register_optimizer_step_post_hook(_post)

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def zero_grad(self: Any, *args: Any, **kwargs: Any) -> Any:
            with _zero_nesting.enter() as outer:
                if outer:
                    _zero_grad()
                return original(self, *args, **kwargs)

        return zero_grad

    patch(torch.optim.Optimizer, "zero_grad", make)
    patch(torch.nn.Module, "zero_grad", make)
