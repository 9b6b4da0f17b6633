"""Per-parameter fingerprints of every stage of the first K optimizer steps (opt-in: `fingerprint` record).

Only when `ProbeOptions.fingerprints` (K, env DDP_DOCTOR_FINGERPRINTS) is set — `ddp-doctor equiv`
sets it (docs/equivalence.md). For each trainable parameter of the model, at each stage of the step:

* ``local``   — per micro-step, this rank's gradient accumulated so far, read inside AccumulateGrad by
  `register_post_accumulate_grad_hook` (before DDP's reducer copies it into its bucket: the same
  read as instruments/gradsync.py, so on a synced micro-step it is the gradient *before* the
  all-reduce);
* ``reduced`` — `.grad` when the step's last outermost `backward` has returned (what DDP's finalize
  left: the averaged gradient; FSDP2: this rank's shard of the reduce-scattered gradient);
* ``clipped`` — `.grad` when the optimizer step starts (after `unscale_` and clipping);
* ``param``   — the parameter before the update; ``update`` — the update θ_after − θ_before.

A fingerprint is ``[Σx, Σx², Σ|x|, max|x|, x[i_0], …, x[i_3]]`` of the tensor in float64 (sample
indices ``i_k = k·(n−1)//3``, fixed by the element count n, so they name the same elements at
every world size); under FSDP2 it is of this rank's local shard (`sharded`; no sample indices).
Names are the model's, with wrapper components (`module`, `_orig_mod`, `_fsdp_wrapped_module`,
`_checkpoint_wrapped_module`, `_forward_module`) dropped, so they match across world sizes.
`sample_hashes`: one 64-bit hash per sample (row of the model input) of every forward with grad
enabled in the step; an integer row's trailing run of one value (padding) counts once, so the
same document padded to another length hashes alike.

The model is found at its first forward with grad enabled (`Module.__call__` is wrapped until
then, and restored at once): the outermost module called that holds trainable parameters; so a single process without
any wrapper is seen like DDP. Every read is of a detached tensor converted to float64 (a copy;
nothing written, no collective). Cost: K steps × (one float64 copy of each gradient per
micro-step and per stage, one copy of the parameters before each update); nothing after step K.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch

from ddp_doctor.probe.instruments.data import _model_input
from ddp_doctor.probe.state import PROBE, guarded
from ddp_doctor.probe.steps import dtensor_type, local

SAMPLES = 4  # fixed-index samples per fingerprint
WRAPPER_COMPONENTS = frozenset(
    {"module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_forward_module"}
)
HASH_MIX = 0x9E3779B97F4A7C15 - (1 << 64)  # odd int64 multiplier folding the row length in

_params: list[tuple[str, weakref.ref[torch.nn.Parameter]]] = []
_handles: list[Any] = []
_discovery: list[Any] = []  # the original Module.__call__ while we wait for the model's first forward
_weights: dict[tuple[torch.device, int], torch.Tensor] = {}
_window: dict[str, Any] = {}


def steps_wanted() -> int:
    options = PROBE.options
    return options.fingerprints if options is not None else 0


def _due() -> bool:
    return PROBE.steps is not None and PROBE.steps.step < steps_wanted()


def clean_name(name: str) -> str:
    """A parameter name without wrapper components: equal for DDP, compile, FSDP and no wrapper."""
    return ".".join(part for part in name.split(".") if part not in WRAPPER_COMPONENTS)


def sample_indices(numel: int) -> list[int]:
    if numel <= 0:
        return []
    return sorted({k * (numel - 1) // (SAMPLES - 1) for k in range(SAMPLES)})


def fingerprint(t: torch.Tensor) -> torch.Tensor:
    """[Σx, Σx², Σ|x|, max|x|, samples…] of `t` (its local shard for a DTensor) as float64, on its device."""
    sharded = local(t) is not t
    x = local(t).detach().reshape(-1).to(torch.float64)
    if x.numel() == 0:
        return torch.zeros(4, dtype=torch.float64, device=x.device)
    a = x.abs()
    parts = [x.sum().reshape(1), x.dot(x).reshape(1), a.sum().reshape(1), a.max().reshape(1)]
    if not sharded:
        parts.append(x[sample_indices(x.numel())])
    return torch.cat(parts)


def _sample_weights(device: torch.device, length: int) -> torch.Tensor:
    w = _weights.get((device, length))
    if w is None:
        gen = torch.Generator().manual_seed(0xF1A9)
        w = torch.randint(-(2**62), 2**62, (length,), generator=gen, dtype=torch.int64).to(device)
        _weights[(device, length)] = w
    return w


def sample_hashes(x: torch.Tensor) -> torch.Tensor:
    """One int64 per row of `x` (its leading dimension): Σ row[j]·w[j] over the row without its
    trailing run of one value (kept once), plus that length × HASH_MIX; int64 wrap-around."""
    rows = x.detach().reshape(x.shape[0], -1)
    if rows.is_floating_point():
        rows = rows.view(
            {2: torch.int16, 4: torch.int32, 8: torch.int64}.get(rows.element_size(), torch.uint8)
        )
    elif rows.dtype == torch.bool:
        rows = rows.view(torch.uint8)
    rows = rows.to(torch.int64)
    length = rows.shape[1]
    if length == 0:
        return torch.zeros(rows.shape[0], dtype=torch.int64, device=rows.device)
    positions = torch.arange(length, device=rows.device)
    differs = rows != rows[:, -1:]
    # last position whose value differs from the row's final value; the run after it is kept once
    last = torch.where(differs, positions, torch.full_like(positions, -1)).amax(dim=1)
    kept = (last + 2).clamp(max=length)
    mask = positions[None, :] < kept[:, None]
    weights = _sample_weights(rows.device, length)
    return (rows * weights * mask).sum(dim=1) + kept * HASH_MIX


def install() -> None:
    if steps_wanted() <= 0:
        return
    original = torch.nn.Module.__call__

    def __call__(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        if _discovery and not torch.compiler.is_compiling():
            if "fingerprints" in PROBE.disabled:
                _stop_discovery()
            else:
                _discover(self)
        return original(self, *args, **kwargs)

    # Module.__call__ is wrapped only until the model is found (its first forward with grad
    # enabled): a global module pre-hook would not see the keyword arguments (`input_ids=`).
    _discovery.append(original)
    torch.nn.Module.__call__ = __call__  # type: ignore[method-assign]


def _stop_discovery() -> None:
    if _discovery:
        torch.nn.Module.__call__ = _discovery.pop()  # type: ignore[method-assign]
    _discovery.clear()


@guarded("fingerprints")
def _discover(module: torch.nn.Module) -> None:
    if not torch.is_grad_enabled():
        return
    if not _due():
        _stop_discovery()
        return
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    if not named:
        return
    _stop_discovery()
    for index, (name, p) in enumerate(named):
        _params.append((clean_name(name), weakref.ref(p)))
        _handles.append(p.register_post_accumulate_grad_hook(functools.partial(_on_grad, index)))
    # registered before this call reaches Module._call_impl: it reads this call's input too
    _handles.append(module.register_forward_pre_hook(_forward_pre, with_kwargs=True))


def _forward_pre(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if torch.compiler.is_compiling():
        return
    _read_input(args, kwargs)


@guarded("fingerprints")
def _read_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if not torch.is_grad_enabled() or not _due():
        return
    x = _model_input(args, kwargs)
    if x is not None and x.dim() > 0 and x.shape[0] > 0:
        _window.setdefault("hashes", []).append(sample_hashes(x))


def _on_grad(index: int, param: torch.Tensor) -> None:
    if torch.compiler.is_compiling():
        return
    _observe_local(index, param)


@guarded("fingerprints")
def _observe_local(index: int, param: torch.Tensor) -> None:
    micros = _window.get("local")
    if not micros or param.grad is None or not _due() or PROBE.steps.reevaluating:
        return
    micros[-1][index] = fingerprint(param.grad)


def _grads() -> dict[int, torch.Tensor]:
    out = {}
    for index, (_, ref) in enumerate(_params):
        p = ref()
        if p is not None and p.grad is not None:
            out[index] = fingerprint(p.grad)
    return out


@guarded("fingerprints")
def begin_backward() -> None:
    """An outermost backward (a micro-step) starts: a new slot for its local gradients."""
    if _params and _due() and not PROBE.steps.reevaluating:
        _window.setdefault("local", []).append({})


@guarded("fingerprints")
def end_backward() -> None:
    """The outermost backward returned: `.grad` is what the reducer left (kept for the last one)."""
    if _params and _due() and not PROBE.steps.reevaluating:
        _window["reduced"] = _grads()


@guarded("fingerprints")
def before_step(optimizer: torch.optim.Optimizer, step: int) -> None:
    """The optimizer is about to update: gradients as it will use them, and the parameters."""
    del optimizer
    if not _params or step >= steps_wanted():
        return
    _window["clipped"] = _grads()
    _window["step"] = step
    params = [ref() for _, ref in _params]
    _window["param"] = {i: fingerprint(p) for i, p in enumerate(params) if p is not None}
    _window["old"] = {i: local(p).detach().clone() for i, p in enumerate(params) if p is not None}


@guarded("fingerprints")
def after_step(step: int) -> None:
    """The update is done: its fingerprint, then one `fingerprint` record (one host transfer)."""
    if _window.get("step") != step or "old" not in _window:
        if _due() or step < steps_wanted():
            _window.pop("local", None)
        return
    old: dict[int, torch.Tensor] = _window.pop("old")
    update = {}
    for i, o in old.items():
        p = _params[i][1]()
        if p is not None:
            update[i] = fingerprint(local(p).detach().to(torch.float64) - o.to(torch.float64))
    del old
    stages = {
        "local": _window.get("local", []),
        "reduced": [_window.get("reduced", {})],
        "clipped": [_window.get("clipped", {})],
        "param": [_window.get("param", {})],
        "update": [update],
    }
    hashes = _window.get("hashes", [])
    n = len(_params)
    flat = [t for slots in stages.values() for slot in slots for t in slot.values()]
    values = _to_host(flat)
    it = iter(values)
    out: dict[str, Any] = {}
    for stage, slots in stages.items():
        rows = []
        for slot in slots:
            rows.append([next(it) if i in slot else None for i in range(n)] if slot else None)
        out[stage] = rows
    hash_values = torch.cat([h.reshape(-1).cpu() for h in hashes]).tolist() if hashes else []
    params = [ref() for _, ref in _params]
    cls = dtensor_type()
    PROBE.emit(
        {
            "kind": "fingerprint",
            "step": step,
            "names": [name for name, _ in _params],
            "numel": [p.numel() if p is not None else 0 for p in params],
            "dtype": [str(p.dtype).removeprefix("torch.") if p is not None else "" for p in params],
            "sharded": cls is not None and any(isinstance(p, cls) for p in params),
            "local": out["local"],
            "reduced": out["reduced"][0],
            "clipped": out["clipped"][0],
            "param": out["param"][0],
            "update": out["update"][0],
            "sample_hashes": [f"{v & ((1 << 64) - 1):016x}" for v in hash_values],
        }
    )
    _window.clear()
    if step + 1 >= steps_wanted():
        release()


def _to_host(tensors: list[torch.Tensor]) -> list[list[float]]:
    """Each fingerprint as a list of floats, one transfer per device."""
    out: list[list[float]] = [[] for _ in tensors]
    by_device: dict[torch.device, list[int]] = {}
    for i, t in enumerate(tensors):
        by_device.setdefault(t.device, []).append(i)
    for indices in by_device.values():
        sizes = [tensors[i].numel() for i in indices]
        flat = torch.cat([tensors[i] for i in indices]).tolist()
        start = 0
        for i, size in zip(indices, sizes):
            out[i] = flat[start : start + size]
            start += size
    return out


def release() -> None:
    _stop_discovery()
    for handle in _handles:
        handle.remove()
    _handles.clear()
    _params.clear()
    _weights.clear()
    _window.clear()
