"""Does the compiled forward match eager in this run? (level `full`, the `compile-numerics` check)

Every `every` optimizer steps (step 0, every, 2·every, ...), on the first forward of a
torch.compile'd module (`OptimizedModule`) in that step, the same inputs are run twice more
through the uncompiled module (`_orig_mod`; a DDP wrapper inside is unwrapped to `.module`, so no
collective is issued) under `no_grad`, inside the same autocast context, and the record is

    {"kind": "compile_check", "step": n, "max_abs": max|y_c − y_e1|, "max_rel": max_abs / max|y_e1|,
     "baseline_abs": max|y_e1 − y_e2|}

where y is the first tensor of the output (`logits` for Hugging Face models). `baseline_abs` is the
eager run-to-run difference (0 without dropout); `report` judges `max_abs` against it, as
`ddp-doctor verify` does. The RNG state is forked around the extra forwards, so training draws the
same random numbers as without the check, and every buffer is restored afterwards (a train-mode
BatchNorm forward updates its running statistics: 12 -> 18 `num_batches_tracked` in 12 steps
before this was done). Forward hooks the script put on submodules do see the two extra calls.
FSDP2 models are skipped: their forward all-gathers.

Hooked by wrapping `OptimizedModule.__init__` (installed when torch._dynamo.eval_frame is
imported, i.e. only by scripts that compile): `torch.compile` itself is wrapped by the `compile`
instrument already. Cost: two eager forwards without grad every `every` steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from ddp_doctor.probe.state import PROBE, after_import, guarded, patch

_checked_steps: dict[int, int] = {}  # id(compiled module) -> last step checked


def _first_tensor(out: Any) -> torch.Tensor | None:
    if isinstance(out, torch.Tensor):
        return out
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    values = out.values() if isinstance(out, dict) else out if isinstance(out, (list, tuple)) else ()
    for value in values:
        found = _first_tensor(value)
        if found is not None:
            return found
    return None


def _due(module: Any) -> int | None:
    options = PROBE.options
    if options is None or options.level != "full" or PROBE.fsdp:
        return None
    step = PROBE.step_index()
    if step % options.every or _checked_steps.get(id(module)) == step:
        return None
    return step


@guarded("compile_check")
def _after_forward(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
    step = _due(module)
    if step is None:
        return
    _checked_steps[id(module)] = step
    compiled = _first_tensor(output)
    eager_module = module._orig_mod
    if isinstance(eager_module, DistributedDataParallel):
        eager_module = eager_module.module
    if compiled is None:
        return
    devices = [compiled.device.index or 0] if compiled.device.type == "cuda" else []
    saved = _save_buffers(eager_module)
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=devices):
            first = _first_tensor(eager_module(*args, **kwargs))
            second = _first_tensor(eager_module(*args, **kwargs))
    finally:
        _restore_buffers(saved)
    if first is None or second is None or first.shape != compiled.shape:
        return
    reference = first.detach().double()
    max_abs = float((compiled.detach().double() - reference).abs().max())
    scale = float(reference.abs().max())
    PROBE.emit(
        {
            "kind": "compile_check",
            "step": step,
            "max_abs": max_abs,
            "max_rel": max_abs / scale if scale > 0 else 0.0,
            "baseline_abs": float((second.detach().double() - reference).abs().max()),
        },
        training=True,
    )


Saved = list[tuple[torch.nn.Module, str, torch.Tensor]]


def _save_buffers(model: torch.nn.Module) -> Saved:
    """Give every buffer of `model` a private copy for the extra forwards; returns the originals.

    A train-mode forward updates buffers (BatchNorm running stats, num_batches_tracked). The
    originals are never written: an in-place restore would bump their version counters, and the
    training graph saved them for its backward ("modified by an inplace operation").
    """
    saved = []
    for owner in model.modules():
        for name, buf in list(owner._buffers.items()):
            if buf is not None:
                saved.append((owner, name, buf))
                owner._buffers[name] = buf.detach().clone()
    return saved


def _restore_buffers(saved: Saved) -> None:
    for owner, name, buf in saved:
        owner._buffers[name] = buf


@guarded("compile_check")
def _hook(module: Any) -> None:
    module.register_forward_hook(_after_forward, with_kwargs=True)


def _install_on_dynamo() -> None:
    from torch._dynamo.eval_frame import OptimizedModule

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            _hook(self)

        return init

    patch(OptimizedModule, "__init__", make)


def install() -> None:
    if PROBE.options is None or PROBE.options.level != "full":
        return
    after_import("torch._dynamo.eval_frame", _install_on_dynamo)
