"""What happened between two optimizer steps on this rank: the `step` record of docs/run-format.md.

Instruments append tensors (losses, squared bucket norms, token counts, input hashes) to the
micro-step that is running; nothing is moved to the host until the optimizer step closes the
window, and then all values of the window move in one transfer per device (on a GPU every
`.item()` is a synchronisation, so one per step instead of one per value).

A window closes at `optimizer.step()` (the global step pre-hook; with a closure, when the
closure's first call returns, since it runs the last backward inside the step) or, when a
GradScaler skips the step, when `scaler.step()` returns without having called it. The record is written as soon as
it is complete: at once without a GradScaler, after `scaler.update()` with one (so it carries the
new scale), and at the latest at the next backward or at exit.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

import torch

from ddp_doctor.probe.state import PROBE

if TYPE_CHECKING:  # imported by the program when it uses DTensors (see dtensor_type)
    from torch.distributed.tensor import DTensor

HASH_MASK = (1 << 64) - 1
# Micro-steps kept in one window. Real accumulation counts are far lower; more means no optimizer
# step is being seen (e.g. the optimizer instrument was disabled), and the window is dropped
# rather than growing without bound.
MAX_MICRO_STEPS = 4096
# Tensor-valued fields of a clip entry, fetched with the window (instruments/clip.py).
CLIP_TENSORS = ("total_norm", "total_norm_shard", "max_abs", "clipped_norm")


@dataclass
class Micro:
    """One backward call (micro-step) and what was observed while it ran."""

    loss: torch.Tensor | None = None
    scale: torch.Tensor | None = None  # GradScaler scale the backward ran with
    loss_fn: dict[str, Any] | None = None
    samples: int | None = None
    tokens: torch.Tensor | None = None
    input_hash: torch.Tensor | None = None
    input_shape: tuple[int, ...] = ()
    sync: int = 0
    local: list[tuple[int | None, torch.Tensor]] = field(default_factory=list)  # (bucket index, ||g||^2)
    synced: frozenset[int] = frozenset()  # DDP models whose gradients this backward reduces (gradsync)
    local_norms: list[torch.Tensor] = field(default_factory=list)  # per-parameter ||g|| (gradsync)
    global_: list[torch.Tensor] = field(default_factory=list)
    local_dots: list[torch.Tensor] = field(default_factory=list)  # per-parameter ⟨g, p⟩ (gradsync, due steps)
    local_dot: torch.Tensor | None = None  # their sum, read by stepgrads.py at the optimizer step


class StepAccumulator:
    def __init__(self) -> None:
        self.step = 0
        self.last_close = time.time()
        self._new_window()
        self.pending: dict[str, Any] | None = None
        self.scaler_seen = False
        # inside DeepSpeedEngine.step(): the engine writes the record once step() returns (deepspeed.py)
        self.engine_step = False
        # inside DeepSpeedEngine.__init__: its fp16/bf16 optimizers step once with zero gradients to
        # create their states; that is not a training step (optimizer.py ignores it)
        self.suspended = False
        # inside `optimizer.step(closure)` before the closure returned (instruments/optimizer.py)
        self.closure_open = False
        # > 0 while a closure is called again within one step (LBFGS): those backwards are no micro-steps
        self.reevaluating = 0

    def _new_window(self) -> None:
        self.micros: list[Micro] = []
        self.current: Micro | None = None
        self.forward: dict[str, Any] | None = None  # inputs of the latest forward with grad enabled
        self.loss_fn: dict[str, Any] | None = None  # latest loss-function call
        self.loss_fn_calls = 0  # loss-function calls since the last backward (instruments/lossfn.py)
        # valid tokens of the latest reduction="none" loss call (a loss reduced by hand; lossfn.py)
        self.unreduced_tokens: torch.Tensor | None = None
        self.zero_grad = 0
        # zero_grad calls made after a backward of this window: those are the ones that wipe
        # accumulated gradients (Lightning zero-grads twice before a window's first backward)
        self.zero_grad_after_backward = 0
        self.sched_steps = 0
        self.unscale_calls = 0
        self.unscaled = False
        self.clip: list[dict[str, Any]] = []
        self.autocast: str | None = None
        self.closed_during_scaler_step = False
        # step-record fields read just before the step (instruments/stepgrads.py), fetched with the window
        self.before_step: dict[str, torch.Tensor] = {}

    def release(self) -> None:
        """Drop the tensors of an open window and of an unwritten record (at exit)."""
        self.pending = None
        self._new_window()

    # --- micro-steps -----------------------------------------------------------------------------
    def begin_backward(self, loss: torch.Tensor | None, scale: torch.Tensor | None) -> Micro:
        # several loss-function calls make one loss (QA heads, VAE terms): no single value is it
        loss_fn = self.loss_fn if self.loss_fn_calls == 1 else None
        micro = Micro(loss=loss, scale=scale, loss_fn=loss_fn)
        if self.forward is not None:
            micro.samples = self.forward["samples"]
            micro.tokens = self.forward["tokens"]
            micro.input_hash = self.forward["hash"]
            micro.input_shape = self.forward["shape"]
        if micro.tokens is None and micro.loss_fn is not None:
            micro.tokens = micro.loss_fn.get("tokens")
        if micro.tokens is None and micro.loss_fn is None:
            micro.tokens = self.unreduced_tokens
        self.unreduced_tokens = None
        self.forward = None
        self.loss_fn = None
        self.loss_fn_calls = 0
        if len(self.micros) >= MAX_MICRO_STEPS:
            self.micros.clear()
        self.micros.append(micro)
        self.current = micro
        return micro

    # --- closing a window ------------------------------------------------------------------------
    def close(self, lr: list[float], skipped: bool) -> None:
        """Turn the window into a `step` record (host transfer happens here) and start the next."""
        now = time.time()
        micros = self.micros
        before_step = list(self.before_step.items())
        values = _fetch(
            [t for m in micros for t in _value_tensors(m)]
            + [c[k] for c in self.clip for k in CLIP_TENSORS if isinstance(c.get(k), torch.Tensor)]
            + [t for _, t in before_step]
        )
        hash_values = iter(_fetch_ints([m.input_hash for m in micros if m.input_hash is not None]))
        vals = iter(values)
        loss_fn: list[dict[str, Any] | None]
        losses, loss_fn, tokens, local, global_, nonfinite = [], [], [], [], [], None
        for index, m in enumerate(micros):
            inv_scale_sq = 1.0
            if m.scale is not None:
                scale = next(vals)
                inv_scale_sq = 1.0 / (scale * scale) if scale else 1.0
            loss = next(vals) if m.loss is not None else None
            losses.append(loss)
            if m.loss_fn is not None:
                entry = {"value": next(vals), "reduction": m.loss_fn["reduction"]}
                entry["n_valid"] = int(next(vals)) if m.loss_fn.get("n_valid") is not None else None
                loss_fn.append(entry)
            else:
                loss_fn.append(None)
            tokens.append(int(next(vals)) if m.tokens is not None else None)
            buckets = [(b, next(vals)) for b, _ in m.local]
            glob = [next(vals) for _ in m.global_]
            local.append(sum(v for _, v in buckets) * inv_scale_sq if buckets else None)
            global_.append(sum(glob) * inv_scale_sq if glob else None)
            if nonfinite is None and loss is not None and not math.isfinite(loss):
                nonfinite = {"where": "loss", "micro": index, "bucket": None, "param": None}
            if nonfinite is None:
                bad = next((i for i, (_, v) in enumerate(buckets) if not math.isfinite(v)), None)
                if bad is not None:
                    nonfinite = {
                        "where": "grad",
                        "micro": index,
                        "bucket": buckets[bad][0],
                        "param": _first_nonfinite_param(),
                    }
        clip = []
        for c in self.clip:
            clip.append({**c, **{k: next(vals) for k in CLIP_TENSORS if isinstance(c.get(k), torch.Tensor)}})
        before_values = {k: next(vals) for k, _ in before_step}
        self.pending = {
            "kind": "step",
            "step": self.step,
            "time": now,
            "dt": now - self.last_close,
            "micro_steps": len(micros),
            "losses": losses,
            "loss_fn": loss_fn,
            "samples": [m.samples for m in micros],
            "tokens": tokens,
            "input_hashes": [
                _hash_hex(next(hash_values), m.input_shape) if m.input_hash is not None else None
                for m in micros
            ],
            "sync": [m.sync for m in micros],
            "grad_sq_local": local,
            "grad_sq_global": global_,
            "zero_grad": self.zero_grad,
            "zero_grad_after_backward": self.zero_grad_after_backward,
            "sched_steps": self.sched_steps,
            "lr": lr,
            "skipped": skipped,
            "scale": None,
            "found_inf": skipped,
            "clip": clip,
            "unscale_calls": self.unscale_calls,
            "nonfinite": nonfinite,
            "autocast": self.autocast,
        }
        self.pending.update(before_values)
        self.last_close = now
        self.step += 1
        autocast = self.autocast
        self._new_window()
        self.autocast = autocast  # an autocast context usually spans several steps

    def write_pending(
        self, scale: float | None = None, found_inf: bool | None = None
    ) -> dict[str, Any] | None:
        record, self.pending = self.pending, None
        if record is None:
            return None
        if scale is not None:
            record["scale"] = scale
        if found_inf is not None:
            record["found_inf"] = found_inf
        PROBE.emit(record, training=True)
        return record


def dtensor_type() -> Any:
    """torch's DTensor class if a DTensor can exist in this process, else None.

    DTensors (FSDP2 parameters and gradients, tensor parallelism) only exist once
    torch.distributed.tensor is imported; looking it up in sys.modules keeps the import off
    programs that never use it.
    """
    module = sys.modules.get("torch.distributed.tensor")
    return getattr(module, "DTensor", None) if module is not None else None


def local(t: torch.Tensor) -> torch.Tensor:
    """This rank's part of `t`: `to_local()` for a DTensor, `t` itself otherwise. Never a collective.

    The probe never calls `full_tensor()`/`redistribute()`: an instrument is disabled per rank on
    its own errors, so a collective issued from a hook could be entered by some ranks only (a hang).
    Sharded quantities are recorded per rank and combined by the analysis (run-format.md).
    """
    cls = dtensor_type()
    return t.to_local() if cls is not None and isinstance(t, cls) else t


def is_partial(t: torch.Tensor) -> TypeGuard[DTensor]:
    """True for a DTensor whose local value is not its full value (Partial or Shard placements)."""
    cls = dtensor_type()
    return cls is not None and isinstance(t, cls) and not all(p.is_replicate() for p in t.placements)


def sq_norm(t: torch.Tensor) -> torch.Tensor:
    """‖t‖² as a float32 0-d tensor on t's device; `vector_norm` was ~9x faster than pow(2).sum()."""
    norm: torch.Tensor = torch.linalg.vector_norm(t, dtype=torch.float32)
    return norm.square()


def _value_tensors(m: Micro) -> list[torch.Tensor]:
    """The tensors of one micro-step, in the order `StepAccumulator.close` pops their values."""
    out = []
    if m.scale is not None:
        out.append(m.scale)
    if m.loss is not None:
        out.append(m.loss)
    if m.loss_fn is not None:
        out.append(m.loss_fn["value"])
        if m.loss_fn.get("n_valid") is not None:
            out.append(m.loss_fn["n_valid"])
    if m.tokens is not None:
        out.append(m.tokens)
    out.extend(t for _, t in m.local)
    out.extend(m.global_)
    return out


def _fetch(tensors: list[torch.Tensor]) -> list[float]:
    """Values of 0-d tensors, one host transfer per device."""
    if not tensors:
        return []
    out: list[float] = [0.0] * len(tensors)
    by_device: dict[torch.device, list[int]] = {}
    for i, t in enumerate(tensors):
        by_device.setdefault(t.device, []).append(i)
    for indices in by_device.values():
        stacked = torch.stack([_scalar(tensors[i]) for i in indices])
        for i, v in zip(indices, stacked.tolist()):
            out[i] = v
    return out


def _scalar(t: torch.Tensor) -> torch.Tensor:
    """A float64 0-d plain tensor: a replicated DTensor's local value is its value; the local value
    of a partial one is not, so it is recorded as nan (unknown) rather than wrong."""
    if is_partial(t):
        return torch.full((), math.nan, dtype=torch.float64, device=local(t).device)
    return local(t).detach().reshape(()).to(torch.float64)


def _fetch_ints(tensors: list[torch.Tensor]) -> list[int]:
    if not tensors:
        return []
    tensors = [local(t) for t in tensors]
    devices = {t.device for t in tensors}
    if len(devices) == 1:
        return torch.stack([t.reshape(()) for t in tensors]).tolist()
    return [int(t) for t in tensors]


def _hash_hex(value: int, shape: tuple[int, ...]) -> str:
    # Fold the shape in so equal contents with different shapes do not collide.
    mixed = (value ^ (hash(shape) * 0x9E3779B97F4A7C15)) & HASH_MASK
    return f"{mixed:016x}"


def _first_nonfinite_param() -> str | None:
    """The first parameter whose gradient (this rank's shard of it, under FSDP2) is not finite."""
    for model in PROBE.watched_models():
        for name, p in model.named_parameters():
            if p.grad is not None and not bool(torch.isfinite(local(p.grad)).all()):
                return name
    return None
