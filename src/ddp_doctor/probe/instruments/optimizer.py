"""Optimizer steps: they close the step window; lr per group; hyper-parameters; zero_grad calls.

The global hooks `register_optimizer_step_pre_hook/post_hook` fire for every torch optimizer,
including the one inside HF's AcceleratedOptimizer (docs/probe.md, measured facts). The first optimizer that steps
is the one that defines step numbers; other optimizers are recorded as configuration only.
Backward calls between two steps are the accumulation count. `zero_grad` is counted on
`Optimizer.zero_grad` and `Module.zero_grad` (outermost call only).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from ddp_doctor.probe.instruments import compile as compile_instrument
from ddp_doctor.probe.instruments import full, params, replicas, update_sample
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
def _pre(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    if PROBE.steps.suspended:
        return
    if optimizer not in _configured:
        _configured.add(optimizer)
        _config(optimizer)
    if not is_primary(optimizer):
        return
    steps = PROBE.steps
    if steps.pending is not None:
        steps.write_pending()
    if steps.step == 0:
        params.report_unused(optimizer)
        compile_instrument.flush_waiting()
        if PROBE.fsdp:
            from ddp_doctor.probe.instruments import fsdp

            fsdp.emit_config()
    full.before_step(optimizer, steps.step)
    update_sample.before_step(optimizer, steps.step)
    steps.close(lr_of(optimizer), skipped=False)
    steps.closed_during_scaler_step = True


@guarded("optimizer")
def _post(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    if PROBE.steps.suspended or not is_primary(optimizer):
        return
    step = PROBE.steps.step - 1
    if step == 0:
        # again after the first step: a closure (`optimizer.step(closure)`, Lightning) runs the
        # backward inside the step, so the pre-hook saw no gradient yet; written only on change
        params.report_unused(optimizer)
    full.after_step(optimizer, step)
    update_sample.after_step(step)
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
    PROBE.steps.zero_grad += 1


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
