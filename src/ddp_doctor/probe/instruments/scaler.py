"""GradScaler: settings, the scale, skipped steps, the un-scaled loss, and `unscale_` calls.

* `scale(loss)` is wrapped to remember which tensor is loss × scale, so the backward instrument
  records the loss itself and the comm hook's squared norms can be divided by scale².
* A skipped step is a `scaler.step()` that returned without calling `optimizer.step()` (the
  optimizer's hooks never fired); the window is closed there with `skipped: true`.
* `update()` is wrapped: found_inf is read before it (it resets the per-optimizer state), the new
  scale after it, and the step record is written then. GradScaler itself already synchronises on
  found_inf inside `step()`, so reading it adds no new synchronisation point.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.amp.grad_scaler import GradScaler

from ddp_doctor.probe.state import PROBE, guarded, patch

# id(scaled tensor) -> (weak ref to it, loss before scaling, scale tensor)
_scaled: dict[int, tuple[weakref.ref[torch.Tensor], torch.Tensor, torch.Tensor]] = {}
_configured: weakref.WeakSet[GradScaler] = weakref.WeakSet()


def unscaled_loss(root: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(loss before scaling, scale) when `root` came out of GradScaler.scale, else None."""
    entry = _scaled.pop(id(root), None)
    if entry is None or entry[0]() is not root:
        return None
    return entry[1], entry[2]


@guarded("scaler")
def _config(scaler: GradScaler) -> None:
    if scaler in _configured:
        return
    _configured.add(scaler)
    record = {"kind": "config", "what": "scaler", "step": PROBE.step_index(), "enabled": scaler.is_enabled()}
    if record["enabled"]:
        # GradScaler(enabled=False) (nanoGPT's idiom for fp32/bf16) never sets these attributes.
        record.update(
            init_scale=scaler._init_scale,
            growth_factor=scaler._growth_factor,
            backoff_factor=scaler._backoff_factor,
            growth_interval=scaler._growth_interval,
        )
    PROBE.emit(record)


@guarded("scaler")
def _scaled_output(scaler: GradScaler, loss: Any, out: Any) -> None:
    # (an enabled scaler's scale() has set _scale by the time its output comes back)
    if not scaler.is_enabled() or scaler._scale is None or not isinstance(loss, torch.Tensor) or out is loss:
        return
    _config(scaler)
    PROBE.steps.scaler_seen = True
    if len(_scaled) > 64:  # scaled tensors that never reached backward (e.g. evaluation)
        _scaled.clear()
    _scaled[id(out)] = (weakref.ref(out), loss.detach(), scaler._scale)


@guarded("scaler")
def _unscale() -> None:
    PROBE.steps.unscale_calls += 1
    PROBE.steps.unscaled = True


@guarded("scaler")
def _before_step() -> None:
    PROBE.steps.closed_during_scaler_step = False


@guarded("scaler")
def _after_step(scaler: GradScaler, optimizer: torch.optim.Optimizer) -> None:
    from ddp_doctor.probe.instruments.optimizer import is_primary, lr_of

    steps = PROBE.steps
    if scaler.is_enabled() and not steps.closed_during_scaler_step and is_primary(optimizer):
        steps.close(lr_of(optimizer), skipped=True)


@guarded("scaler")
def _found_inf(scaler: GradScaler) -> bool | None:
    found = [
        v for state in scaler._per_optimizer_states.values() for v in state["found_inf_per_device"].values()
    ]
    return bool(sum(v.item() for v in found)) if found else None


@guarded("scaler")
def _after_update(scaler: GradScaler, found_inf: bool | None) -> None:
    from ddp_doctor.probe.instruments.optimizer import finish_step, primary

    if scaler.is_enabled() and scaler._scale is not None:  # (update() of an enabled scaler needs it set)
        finish_step(primary(), scale=float(scaler._scale.item()), found_inf=found_inf)


def release() -> None:
    _scaled.clear()


def install() -> None:
    def make_init(original: Callable[..., Any]) -> Callable[..., Any]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            _config(self)

        return __init__

    def make_scale(original: Callable[..., Any]) -> Callable[..., Any]:
        def scale(self: Any, outputs: Any) -> Any:
            out = original(self, outputs)
            _scaled_output(self, outputs, out)
            return out

        return scale

    def make_unscale(original: Callable[..., Any]) -> Callable[..., Any]:
        def unscale_(self: Any, optimizer: torch.optim.Optimizer) -> None:
            original(self, optimizer)
            _unscale()

        return unscale_

    def make_step(original: Callable[..., Any]) -> Callable[..., Any]:
        def step(self: Any, optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
            _before_step()
            out = original(self, optimizer, *args, **kwargs)
            _after_step(self, optimizer)
            return out

        return step

    def make_update(original: Callable[..., Any]) -> Callable[..., Any]:
        def update(self: Any, new_scale: Any = None) -> None:
            found_inf = _found_inf(self) if self.is_enabled() else None
            original(self, new_scale)
            _after_update(self, found_inf)

        return update

    patch(GradScaler, "__init__", make_init)
    patch(GradScaler, "scale", make_scale)
    patch(GradScaler, "unscale_", make_unscale)
    patch(GradScaler, "step", make_step)
    patch(GradScaler, "update", make_update)
