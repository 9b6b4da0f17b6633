"""DeepSpeed engines: micro-step losses, step boundaries, skipped fp16 steps, loss scale, gradient norm.

Installed only once the program imports `deepspeed.runtime.engine` (attach.py); the probe never
imports DeepSpeed itself. Observed through the engine's public methods, without a collective of
ours and without touching a value the engine computes:

* `DeepSpeedEngine.__init__` (what `deepspeed.initialize` builds): a `config`/`deepspeed` record
  from the engine's getters (`zero_optimization_stage()`, `gradient_accumulation_steps()`,
  `train_micro_batch_size_per_gpu()`, `gradient_clipping()`, `fp16_enabled()`, ...); the user's
  module is watched (parameter names, inputs) like a DDP model.
* `DeepSpeedEngine.backward(loss, scale_wrt_gas=True)`: the engine divides the loss by the
  accumulation count (GAS) and multiplies it by the fp16 loss scale before `loss.backward()`.
  The micro-step (opened by the backward instrument on that inner call) records the root the
  gradients come from, without the loss scale: `loss / GAS` (or `loss` with
  `scale_wrt_gas=False`), the same quantity the torch path records for `(loss / A).backward()`.
  Gradient reductions the engine starts while it runs (`deepspeed.comm` all-reduce, reduce,
  reduce-scatter calls) are counted as that micro-step's `sync`.
* `DeepSpeedEngine.step()`: an optimizer step happened when `engine.global_steps` advanced
  (the engine's accumulation boundary, managed or not). The inner torch optimizer's step hooks
  close the window as usual; when the engine skipped the update (fp16 overflow: `skipped_steps`
  advanced, the inner optimizer never stepped) the window is closed here with `skipped: true`.
  The step record is written after `step()` returns, with the loss scale after the engine's
  update (`scale`, fp16 only), `found_inf`, the global gradient norm (`grad_norm`: unscaled,
  before clipping; `get_global_grad_norm()`, or for stage 0 in fp32, where the engine keeps none,
  the norm of the all-reduced gradients every rank holds) and, with `gradient_clipping` > 0, a
  `clip` entry (DeepSpeed clips by that global norm after unscaling).

With ZeRO (stage ≥ 1) or fp16/bf16 master weights the module's `.grad` is not where the gradient
lives at the optimizer step, and the inner optimizer updates flat fp32 partitions before the
engine copies them back: the unused-parameter report and the `full`/update-ratio samples would
read the wrong tensors there, so those instruments are switched off on such engines (recorded
as not measured); with ZeRO-3 parameters are partitioned, so replica checksums are off too.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch

from ddp_doctor.probe.instruments import data, params
from ddp_doctor.probe.state import PROBE, Nesting, guarded, patch
from ddp_doctor.probe.steps import sq_norm

# deepspeed.comm functions that reduce gradients (counted as `sync` while engine.backward runs)
REDUCTIONS = (
    "all_reduce",
    "all_reduce_coalesced",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_fn",
    "reduce_scatter_tensor",
    "reduce_scatter_coalesced",
)

_backward_nesting = Nesting()
_step_nesting = Nesting()
_configured: weakref.WeakSet[Any] = weakref.WeakSet()
# id() of this window's micro-steps whose root is final: those of engine.backward, and torch-style
# `loss.backward()` ones once _torch_style_roots fixed them; emptied when the window closes
_engine_micros: set[int] = set()
_local = threading.local()  # .before: micro-steps before the engine.backward running in this thread


def _getter(engine: Any, name: str) -> Any:
    """engine.name() when the engine has that getter (older/newer DeepSpeed versions differ)."""
    method = getattr(engine, name, None)
    if not callable(method):
        return None
    try:
        return method()
    except Exception:  # noqa: BLE001 - a getter this version does not support is "not recorded"
        return None


def _plain(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def loss_scale(engine: Any) -> float | None:
    """The fp16 loss scale the engine's optimizer holds now (None without fp16)."""
    if not _getter(engine, "fp16_enabled"):
        return None
    opt = getattr(engine, "optimizer", None)
    for holder, name in (
        (getattr(opt, "loss_scale_config", None), "cur_scale"),
        (opt, "cur_scale"),
        (opt, "loss_scale"),
    ):
        value = getattr(holder, name, None) if holder is not None else None
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


@guarded("deepspeed")
def _suspend(value: bool) -> None:
    PROBE.steps.suspended = value


def _reset(flag: str) -> None:
    """Clear a StepAccumulator flag set around an engine call, whatever happened to the instrument."""
    if PROBE.steps is not None:
        setattr(PROBE.steps, flag, False)


@guarded("deepspeed")
def _constructed(engine: Any) -> None:
    if engine in _configured:
        return
    _configured.add(engine)
    PROBE.mark_training()
    module = getattr(engine, "module", None)
    if isinstance(module, torch.nn.Module):
        params.watch(engine, module)
        data.watch_inputs(engine)
    stage = _getter(engine, "zero_optimization_stage") or 0
    fp16, bf16 = bool(_getter(engine, "fp16_enabled")), bool(_getter(engine, "bfloat16_enabled"))
    if stage >= 1 or fp16 or bf16:
        # gradients and the updated weights live in the engine's own buffers (module docstring)
        PROBE.disabled.update(("params", "full", "update_sample", "stepgrads"))
    if stage >= 3:
        PROBE.disabled.add("replicas")
    import deepspeed

    PROBE.emit(
        {
            "kind": "config",
            "what": "deepspeed",
            "step": PROBE.step_index(),
            "version": str(getattr(deepspeed, "__version__", "")),
            "zero_stage": int(stage),
            "gradient_accumulation_steps": _plain(_getter(engine, "gradient_accumulation_steps")),
            "train_micro_batch_size_per_gpu": _plain(_getter(engine, "train_micro_batch_size_per_gpu")),
            "train_batch_size": _plain(_getter(engine, "train_batch_size")),
            "dp_world_size": _plain(getattr(engine, "dp_world_size", None)),
            "gradient_clipping": _plain(_getter(engine, "gradient_clipping")),
            "fp16": fp16,
            "bf16": bf16,
            # the dtype the engine reduces gradients in (its property: the configured
            # communication_data_type, else fp16/bf16/fp32 from the precision config)
            "communication_data_type": _dtype_name(_attribute(engine, "communication_data_type")),
            "loss_scale": _plain(_getter(engine, "loss_scale")) if fp16 else None,
            "dynamic_loss_scale": bool(_getter(engine, "dynamic_loss_scale")) if fp16 else None,
            "initial_loss_scale": _plain(_getter(engine, "initial_dynamic_scale")) if fp16 else None,
            "optimizer": type(getattr(engine, "optimizer", None)).__name__,
            "basic_optimizer": type(getattr(engine, "basic_optimizer", None)).__name__,
            "offload_optimizer": _offload(_getter(engine, "zero_offload_optimizer")),
            "offload_param": _offload(_getter(engine, "zero_offload_param")),
            "module": type(module).__name__,
        },
        training=True,
    )


def _attribute(engine: Any, name: str) -> Any:
    """engine.name (a property some DeepSpeed versions lack or raise in): None when unreadable."""
    try:
        return getattr(engine, name, None)
    except Exception:  # noqa: BLE001 - a property this version cannot compute is "not recorded"
        return None


def _dtype_name(value: Any) -> str | None:
    return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else None


def _offload(value: Any) -> str | None:
    """The offload device ("cpu", "nvme") of a DeepSpeed offload config, None when not offloading."""
    device = getattr(value, "device", value)
    device = getattr(device, "value", device)  # an OffloadDeviceEnum
    if device is None or str(device) in ("none", "OffloadDeviceEnum.none"):
        return None
    return str(device)


# --- backward ------------------------------------------------------------------------------------


@guarded("deepspeed")
def _before_backward() -> int:
    return len(PROBE.steps.micros)


@guarded("deepspeed")
def _backward_done(engine: Any, loss: Any, scale_wrt_gas: bool, before: int | None) -> None:
    """The engine's inner `loss.backward()` opened a micro-step: record the root it came from."""
    micros = PROBE.steps.micros
    if before is None or len(micros) <= before or not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        return
    root = loss.detach()
    if scale_wrt_gas:
        root = root / _getter(engine, "gradient_accumulation_steps")
    micros[-1].loss, micros[-1].scale = root, None
    _engine_micros.add(id(micros[-1]))


@guarded("deepspeed")
def _on_reduction() -> None:
    """A deepspeed.comm reduction: a gradient sync when it runs inside a backward (the engine's
    hooks, or its epilogue inside `engine.backward` after the inner `loss.backward()` returned)."""
    steps = PROBE.steps
    micro = steps.current
    before = getattr(_local, "before", None)
    if micro is None and before is not None and len(steps.micros) > before:
        micro = steps.micros[-1]
    if micro is not None:
        micro.sync += 1


# --- step ----------------------------------------------------------------------------------------


@guarded("deepspeed")
def _before_step(engine: Any) -> dict[str, Any]:
    steps = PROBE.steps
    steps.engine_step = True
    state = {
        "global_steps": getattr(engine, "global_steps", None),
        "skipped_steps": getattr(engine, "skipped_steps", None),
        "window": steps.step,
        "lr": [float(v) for v in (_getter(engine, "get_lr") or [])],
        "grad_sq": None,
    }
    _torch_style_roots(engine)
    stage = _getter(engine, "zero_optimization_stage") or 0
    if (
        stage == 0
        and not _getter(engine, "fp16_enabled")
        and not _getter(engine, "bfloat16_enabled")
        and _getter(engine, "is_gradient_accumulation_boundary")
    ):
        # stage 0 in fp32 keeps no global norm; the gradients every rank holds are all-reduced here
        grads = [p.grad for p in engine.module.parameters() if p.grad is not None]
        if grads:
            state["grad_sq"] = torch.stack([sq_norm(g).to(grads[0].device) for g in grads]).sum()
    return state


def _torch_style_roots(engine: Any) -> None:
    """Micro-steps whose backward was `loss.backward()` on the engine's output, not engine.backward:
    the engine's output hooks divide those gradients by GAS, and with fp16 the root is
    `engine.scale(loss)` (loss × the current scale, which only changes at a step). Record the root
    the gradients come from, as for engine.backward: recorded root / GAS / scale."""
    steps = PROBE.steps
    torch_style = [m for m in steps.micros if id(m) not in _engine_micros]
    if not torch_style:
        return
    divisor = float(_getter(engine, "gradient_accumulation_steps") or 1) * (loss_scale(engine) or 1.0)
    for m in torch_style:
        _engine_micros.add(id(m))  # fixed once (engine.step() runs after every micro-step)
        if m.loss is not None:
            m.loss = m.loss / divisor


@guarded("deepspeed")
def _after_step(engine: Any, state: dict[str, Any] | None) -> None:
    from ddp_doctor.probe.instruments.optimizer import finish_step, primary

    steps = PROBE.steps
    steps.engine_step = False
    if state is None:
        return
    if steps.step != state["window"]:
        _engine_micros.clear()  # that window's micro-steps are gone
    gs = getattr(engine, "global_steps", None)
    if not isinstance(gs, int) or not isinstance(state["global_steps"], int) or gs <= state["global_steps"]:
        if steps.pending is not None:  # not a boundary, but something closed a window: write it
            finish_step(primary())
        return
    skipped_now = getattr(engine, "skipped_steps", None)
    skipped = (
        isinstance(skipped_now, int)
        and isinstance(state["skipped_steps"], int)
        and skipped_now > state["skipped_steps"]
    )
    if steps.step == state["window"]:  # the inner optimizer never stepped (fp16 overflow)
        if steps.pending is not None:
            steps.write_pending()
        steps.close(state["lr"], skipped=True)
    _engine_micros.clear()
    record = steps.pending
    if record is None:
        return
    norm = _grad_norm(engine, state)
    record["skipped"] = bool(record["skipped"] or skipped)
    record["found_inf"] = skipped
    record["grad_norm"] = norm
    if not record["lr"] and state["lr"]:
        record["lr"] = state["lr"]
    clipping = _getter(engine, "gradient_clipping")
    if isinstance(clipping, (int, float)) and clipping > 0:
        fp16 = bool(_getter(engine, "fp16_enabled"))
        record["clip"] = [
            *record["clip"],
            {"max_norm": float(clipping), "total_norm": norm, "after_unscale": True, "scaler": fp16},
        ]
    finish_step(primary(), scale=loss_scale(engine), found_inf=skipped)


def _grad_norm(engine: Any, state: dict[str, Any]) -> float | None:
    value = _getter(engine, "get_global_grad_norm")
    if value is None and state["grad_sq"] is not None:
        value = state["grad_sq"].sqrt()
    if isinstance(value, torch.Tensor):
        value = value.item() if value.numel() == 1 else None  # the engine synchronised in its step
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)  # nan/inf (an fp16 overflow step) are written as "nan"/"inf"
    return None


# --- installation --------------------------------------------------------------------------------


def install() -> None:
    import deepspeed.comm
    from deepspeed.runtime.engine import DeepSpeedEngine

    def make_init(original: Callable[..., Any]) -> Callable[..., Any]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            _suspend(True)
            try:
                original(self, *args, **kwargs)
            finally:
                _reset("suspended")  # unguarded: a disabled instrument must not leave it set
            _constructed(self)

        return __init__

    def make_backward(original: Callable[..., Any]) -> Callable[..., Any]:
        def backward(self: Any, loss: Any, *args: Any, **kwargs: Any) -> Any:
            with _backward_nesting.enter() as outer:
                if not outer:
                    return original(self, loss, *args, **kwargs)
                before = _before_backward()
                _local.before = before
                try:
                    return original(self, loss, *args, **kwargs)
                finally:
                    _local.before = None
                    scale_wrt_gas = kwargs.get("scale_wrt_gas", args[1] if len(args) > 1 else True)
                    _backward_done(self, loss, bool(scale_wrt_gas), before)

        return backward

    def make_step(original: Callable[..., Any]) -> Callable[..., Any]:
        def step(self: Any, *args: Any, **kwargs: Any) -> Any:
            with _step_nesting.enter() as outer:
                if not outer:
                    return original(self, *args, **kwargs)
                state = _before_step(self)
                try:
                    return original(self, *args, **kwargs)
                finally:
                    _after_step(self, state)
                    _reset("engine_step")

        return step

    def make_reduction(original: Callable[..., Any]) -> Callable[..., Any]:
        def reduction(*args: Any, **kwargs: Any) -> Any:
            _on_reduction()
            return original(*args, **kwargs)

        return reduction

    patch(DeepSpeedEngine, "__init__", make_init)
    patch(DeepSpeedEngine, "backward", make_backward)
    patch(DeepSpeedEngine, "step", make_step)
    for name in REDUCTIONS:
        if callable(getattr(deepspeed.comm, name, None)):
            patch(deepspeed.comm, name, make_reduction)
