"""Apply `ddp-doctor run --set KEY=VALUE` interventions inside a training process.

Called once per process, right after torch is imported (the probe's import hook), with the
`DDP_DOCTOR_SET` JSON object that `run --set` put in the environment. Each key of
ddp_doctor.experiments.interventions.SPECS is applied by patching torch, never the user's code:

* ``compile=off``: ``torch.compile`` returns its input (or an identity decorator) and
  ``nn.Module.compile`` does nothing.
* ``adam.eps`` / ``adam.beta2``: keyword override in ``Adam``/``AdamW.__init__`` (so the
  optimizer's recorded config shows it), plus a global optimizer-step pre-hook that sets it in
  every param group holding ``eps``/``betas`` (groups added later, other Adam-style classes).
* ``lr.scale`` / ``warmup``: a global step pre-hook multiplies each group's lr by
  ``scale × min(1, (k+1)/N)`` (k = this optimizer's step count) and the post-hook restores the
  original value, so LR schedulers read and write their own, unscaled lr.
* ``clip``: a global step pre-hook runs ``clip_grad_norm_`` over the optimizer's parameters.
  ``GradScaler.step`` unscales before calling ``optimizer.step``, so the hook sees true gradients;
  optimizers that unscale inside their own step (fused, ``_step_supports_amp_scaling``) carry
  ``grad_scale`` and the threshold is multiplied by it instead.
* ``ddp.bucket_cap_mb`` / ``ddp.find_unused``: keyword override in
  ``DistributedDataParallel.__init__``.
* ``sampler.set_epoch=auto``: a ``DistributedSampler`` iterated again with no ``set_epoch`` call
  in between advances ``epoch`` by one itself.
* ``seed``: seeds torch, random and numpy at start, and mixes the seed into every later
  ``torch.manual_seed(s)`` of the script (``s XOR seed·φ64``, a bijection, so per-rank seeds stay
  distinct and all ranks stay consistent).

Never raises into user code: a key that fails to apply is returned under ``errors``, and every
patch swallows its own failures (counted in :data:`EFFECTS` under ``"<key>:error"``).
:data:`EFFECTS` counts how often each intervention took effect, so the launcher can record in
the manifest whether an intervention applied to the run at all (e.g. ``adam.eps`` on an SGD run).
"""

from __future__ import annotations

import functools
import json
import os
import weakref
from collections import Counter
from typing import Any

from ddp_doctor.experiments.interventions import ENV_VAR, parse_value

# 2^64 / golden ratio, odd: the usual multiplicative-hash constant (Knuth, TAOCP vol. 3, 6.4).
_SEED_MIX = 0x9E3779B97F4A7C15
_U64 = (1 << 64) - 1

# How often each intervention took effect in this process (key → count).
EFFECTS: Counter[str] = Counter()

# Per-optimizer state of the lr hooks: the step count k and the lrs to restore after the step.
_optimizer_steps: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_saved_lrs: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()
_applied: dict[str, object] = {}
# ids of optimizers wrapped by another hooked optimizer (ZeroRedundancyOptimizer.optim): skipped.
_inner_ids: set[int] = set()


def apply_from_env(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Apply the interventions of ``DDP_DOCTOR_SET``; return ``{"applied": {...}, "errors": {...}}``.

    ``applied`` maps each key to its typed value; ``errors`` maps a key (or ``DDP_DOCTOR_SET``
    itself) to the reason it was not applied. Applying twice in one process is a no-op.
    """
    env = os.environ if environ is None else environ
    result: dict[str, Any] = {"applied": {}, "errors": {}}
    text = env.get(ENV_VAR)
    if not text:
        return result
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("must be a JSON object KEY -> VALUE")
    except ValueError as err:
        result["errors"][ENV_VAR] = f"{type(err).__name__}: {err}"
        return result
    values: dict[str, object] = {}
    for key, value in raw.items():
        try:
            values[key] = parse_value(str(key), str(value))
        except ValueError as err:
            result["errors"][key] = str(err)
    needs_step_hooks = False
    for key, value in values.items():
        if key in _applied:
            result["applied"][key] = value
            continue
        # Marked applied before patching: patching imports torch, whose import hook (the probe's
        # start-up) calls apply_from_env again; that nested call must not patch a second time
        # (a second seed wrapper would XOR the seed away again).
        _applied[key] = value
        try:
            needs_step_hooks |= _APPLY[key](value)
            result["applied"][key] = value
        except Exception as err:  # never raise into user code
            del _applied[key]
            result["errors"][key] = f"{type(err).__name__}: {err}"
    if needs_step_hooks and "_step_hooks" not in _applied:
        _applied["_step_hooks"] = True
        try:
            _install_step_hooks()
        except Exception as err:
            for key in ("adam.eps", "adam.beta2", "lr.scale", "warmup", "clip"):
                if key in result["applied"]:
                    result["errors"][key] = f"{type(err).__name__}: {err}"
                    del result["applied"][key]
    return result


def _guarded(key: str, fallback: Any):
    """Decorator: run the patch body; on any exception count it and call ``fallback`` instead."""

    def wrap(body):
        @functools.wraps(body)
        def run(*args, **kwargs):
            try:
                return body(*args, **kwargs)
            except Exception:
                EFFECTS[f"{key}:error"] += 1
                return fallback(*args, **kwargs)

        return run

    return wrap


# --- compile=off ---------------------------------------------------------------------------


def _apply_compile(_: object) -> bool:
    import torch

    def compile_off(model=None, *args, **kwargs):
        EFFECTS["compile"] += 1
        if model is None:  # used as @torch.compile(...) with options: return an identity decorator
            return lambda fn: fn
        return model

    def module_compile_off(self, *args, **kwargs):
        EFFECTS["compile"] += 1

    compile_off.__wrapped__ = torch.compile
    torch.compile = compile_off
    torch.nn.Module.compile = module_compile_off
    return False


# --- adam.eps / adam.beta2 -----------------------------------------------------------------


def _override_adam_kwargs(kwargs: dict[str, Any]) -> None:
    if "adam.eps" in _applied:
        kwargs["eps"] = _applied["adam.eps"]
        EFFECTS["adam.eps"] += 1
    if "adam.beta2" in _applied:
        beta1 = kwargs.get("betas", (0.9, 0.999))[0]
        kwargs["betas"] = (beta1, _applied["adam.beta2"])
        EFFECTS["adam.beta2"] += 1


def _patch_adam_init() -> None:
    import inspect

    import torch

    for cls in (torch.optim.Adam, torch.optim.AdamW):
        if getattr(cls.__init__, "_ddp_doctor_adam", False):
            continue
        original = cls.__init__
        signature = inspect.signature(original)

        def init(self, *args, _original=original, _signature=signature, **kwargs):
            try:
                bound = _signature.bind_partial(self, *args, **kwargs)
                call = dict(bound.arguments)
                call.pop("self")
                _override_adam_kwargs(call)
            except Exception:
                EFFECTS["adam:error"] += 1
                return _original(self, *args, **kwargs)
            return _original(self, **call)

        functools.update_wrapper(init, original)
        init._ddp_doctor_adam = True
        cls.__init__ = init


def _apply_adam(key: str):
    def apply(value: object) -> bool:
        _patch_adam_init()
        return True

    return apply


def _set_adam_groups(optimizer: Any) -> None:
    for group in optimizer.param_groups:
        if "adam.eps" in _applied and "eps" in group and group["eps"] != _applied["adam.eps"]:
            group["eps"] = _applied["adam.eps"]
            EFFECTS["adam.eps"] += 1
        betas = group.get("betas")
        if (
            "adam.beta2" in _applied
            and isinstance(betas, (tuple, list))
            and len(betas) == 2
            and betas[1] != _applied["adam.beta2"]
        ):
            group["betas"] = (betas[0], _applied["adam.beta2"])
            EFFECTS["adam.beta2"] += 1


# --- lr.scale / warmup ---------------------------------------------------------------------


def _lr_factor(optimizer: Any) -> float:
    factor = float(_applied.get("lr.scale", 1.0))
    warmup = _applied.get("warmup")
    if warmup is not None:
        factor *= min(1.0, (_optimizer_steps.get(optimizer, 0) + 1) / int(warmup))
    return factor


def _scale_lrs(optimizer: Any) -> None:
    _restore_lrs(optimizer, count=False)  # a previous step that raised never restored its lrs
    factor = _lr_factor(optimizer)
    _saved_lrs[optimizer] = [group["lr"] for group in optimizer.param_groups]
    if factor != 1.0:
        for group in optimizer.param_groups:
            group["lr"] = group["lr"] * factor
    for key in ("lr.scale", "warmup"):
        if key in _applied:
            EFFECTS[key] += 1


def _restore_lrs(optimizer: Any, count: bool = True) -> None:
    saved = _saved_lrs.pop(optimizer, None)
    if saved is not None and len(saved) == len(optimizer.param_groups):
        for group, lr in zip(optimizer.param_groups, saved):
            group["lr"] = lr
    if count:
        _optimizer_steps[optimizer] = _optimizer_steps.get(optimizer, 0) + 1


# --- clip ----------------------------------------------------------------------------------


def _clip(optimizer: Any) -> None:
    import torch

    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if not params:
        return
    max_norm = float(_applied["clip"])
    grad_scale = getattr(optimizer, "grad_scale", None)  # fused optimizers unscale inside step
    if grad_scale is not None:
        max_norm *= float(grad_scale)
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    EFFECTS["clip"] += 1


# --- the global optimizer-step hooks shared by the keys above ------------------------------


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


def _is_inner(optimizer: Any) -> bool:
    """Is this the inner optimizer of a wrapper whose own step is hooked (ZeroRedundancyOptimizer's
    `optim`)? The wrapper already applied the intervention: scaling again would apply lr.scale²,
    and clipping the inner one would use only this rank's shard of the gradient norm."""
    return id(optimizer) in _inner_ids


def _mark_inner(optimizer: Any) -> None:
    from torch.optim import Optimizer

    for name in ("optim", "optimizer"):
        inner = getattr(optimizer, name, None)
        if isinstance(inner, Optimizer) and inner is not optimizer:
            _inner_ids.add(id(inner))


@_guarded("optimizer-pre-hook", _noop)
def _pre_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    _mark_inner(optimizer)
    if _is_inner(optimizer):
        return
    if "adam.eps" in _applied or "adam.beta2" in _applied:
        _set_adam_groups(optimizer)
    if "clip" in _applied:
        _clip(optimizer)
    if "lr.scale" in _applied or "warmup" in _applied:
        _scale_lrs(optimizer)


@_guarded("optimizer-post-hook", _noop)
def _post_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    if _is_inner(optimizer):
        return
    if "lr.scale" in _applied or "warmup" in _applied:
        _restore_lrs(optimizer)


def _install_step_hooks() -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(_pre_step)
    register_optimizer_step_post_hook(_post_step)


def _apply_step_key(value: object) -> bool:
    return True


# --- ddp.bucket_cap_mb / ddp.find_unused ---------------------------------------------------


def _apply_ddp(key: str, kwarg: str):
    def apply(value: object) -> bool:
        from torch.nn.parallel import DistributedDataParallel as DDP

        overrides = getattr(DDP.__init__, "_ddp_doctor_overrides", None)
        if overrides is None:
            original = DDP.__init__

            @functools.wraps(original)
            def init(self, *args, **kwargs):
                for name, (ikey, ivalue) in init._ddp_doctor_overrides.items():
                    kwargs[name] = ivalue
                    EFFECTS[ikey] += 1
                return original(self, *args, **kwargs)

            init._ddp_doctor_overrides = overrides = {}
            DDP.__init__ = init
        overrides[kwarg] = (key, value)
        return False

    return apply


# --- sampler.set_epoch=auto ----------------------------------------------------------------


def _apply_set_epoch(_: object) -> bool:
    from torch.utils.data.distributed import DistributedSampler

    original_iter = DistributedSampler.__iter__
    original_set_epoch = DistributedSampler.set_epoch

    @functools.wraps(original_set_epoch)
    def set_epoch(self, epoch: int) -> None:
        self._ddp_doctor_epoch_set = True
        original_set_epoch(self, epoch)

    @functools.wraps(original_iter)
    def iterate(self):
        try:
            if getattr(self, "_ddp_doctor_iterated", False) and not getattr(
                self, "_ddp_doctor_epoch_set", False
            ):
                self.epoch += 1
                EFFECTS["sampler.set_epoch"] += 1
            self._ddp_doctor_iterated = True
            self._ddp_doctor_epoch_set = False
        except Exception:
            EFFECTS["sampler.set_epoch:error"] += 1
        return original_iter(self)

    DistributedSampler.set_epoch = set_epoch
    DistributedSampler.__iter__ = iterate
    return False


# --- seed ----------------------------------------------------------------------------------


def _apply_seed(value: object) -> bool:
    import random

    import torch
    import torch.random

    seed = int(value)
    original = torch.random.manual_seed
    mix = (seed * _SEED_MIX) & _U64

    @functools.wraps(original)
    def manual_seed(s):
        try:
            mixed = (int(s) & _U64) ^ mix
        except Exception:
            EFFECTS["seed:error"] += 1
            return original(s)
        EFFECTS["seed"] += 1
        return original(mixed)

    original(seed)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    EFFECTS["seed"] += 1
    torch.manual_seed = manual_seed
    torch.random.manual_seed = manual_seed
    return False


_APPLY = {
    "compile": _apply_compile,
    "adam.eps": _apply_adam("adam.eps"),
    "adam.beta2": _apply_adam("adam.beta2"),
    "lr.scale": _apply_step_key,
    "warmup": _apply_step_key,
    "clip": _apply_step_key,
    "ddp.bucket_cap_mb": _apply_ddp("ddp.bucket_cap_mb", "bucket_cap_mb"),
    "ddp.find_unused": _apply_ddp("ddp.find_unused", "find_unused_parameters"),
    "sampler.set_epoch": _apply_set_epoch,
    "seed": _apply_seed,
}
