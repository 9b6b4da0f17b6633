"""What data each micro-step saw: sampler indices, micro-batch size, valid tokens, input hash.

* `DistributedSampler.__iter__` is wrapped: the indices of every iteration go into a `sampler`
  record (hash of the whole list, the first 32, the epoch value it ran at), so a missing
  `set_epoch` shows as one order repeated across epochs. Scripts hold several samplers (train,
  val, test) and iterate one more than once per epoch (`next(iter(loader))` peeks, re-created
  iterators): each record names its sampler (`sampler`: 0, 1, ... in order of first iteration on
  this rank) and carries, for that sampler's previous iteration, how many indices were drawn from
  it (`prev_drawn`) and how many optimizer steps it fed (`prev_steps`: steps that closed while it
  was the iteration drawn from last), so the analysis judges the sampler that feeds the optimizer
  steps, and tells a one-batch peek from an epoch. The returned iterator counts its draws; the
  samplers themselves are held only weakly.
* A forward pre-hook on the watched model (DDP wrapper, FSDP2 root) reads the model input:
  leading dimension (samples), labels != ignore_index (tokens, when `labels` is passed), and a
  64-bit hash of the input computed on the device (`input_hash`: the sum of the raw input bits
  and a bounded weighted sample, int64 wrap-around) so nothing moves to the host before the
  optimizer step. Without
  a DistributedSampler, identical hashes across ranks show that ranks read the same data
  (docs/probe.md, measured facts: 32/32 identical without a sampler, 0/16 with one).
"""

from __future__ import annotations

import hashlib
import operator
import weakref
from collections.abc import Callable, Iterator, Mapping, Sized
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch.utils.data.distributed import DistributedSampler

from ddp_doctor.probe.state import PROBE, guarded, patch

HEAD = 32  # indices kept verbatim per sampler record
IGNORE_INDEX = -100  # the label value HF and torch losses skip by default
# a model input inside a list/dict argument (Lightning's batch): how deep, how many items per level
NESTED_DEPTH, NESTED_ITEMS = 2, 8
# The hash reads a bounded, evenly strided sample of the input plus one full-length sum of its raw
# bits: the sample's weights are fixed random int64s (one tensor of SAMPLE elements per device),
# and nothing allocated scales with the input (a 3x224x224 batch cost +106 MB of int64 products
# when every element had its own multiplier).
SAMPLE = 4096
# The full sum widens to int64 a chunk at a time (a reduction with dtype=int64 first casts its
# whole input): at most CHUNK x 8 bytes (2 MiB) of temporaries, whatever the input size (8 MiB
# chunks left 56-66 MiB of peak RSS behind on CPU: the allocator did not reuse them).
CHUNK = 1 << 18
_weights: dict[torch.device, torch.Tensor] = {}
_hooks: dict[int, list[Any]] = {}  # id(watched model) -> its hook handles
_running: torch.nn.Module | None = None


def _sample_weights(device: torch.device) -> torch.Tensor:
    w = _weights.get(device)
    if w is None:
        gen = torch.Generator().manual_seed(0x5EED)
        w = torch.randint(-(2**62), 2**62, (SAMPLE,), generator=gen, dtype=torch.int64).to(device)
        _weights[device] = w
    return w


def input_hash(x: torch.Tensor) -> torch.Tensor:
    """A 0-d int64 tensor, computed where `x` lives, that changes when the input changes.

    Every element enters through the sum of the raw bits (a change of any one element changes it
    unless another change cancels it exactly); up to SAMPLE strided elements also enter with a
    random weight each, so permuted or swapped data changes the hash too.
    """
    flat = x.detach().reshape(-1)
    if flat.is_floating_point() or flat.is_complex():
        flat = flat.view(
            {2: torch.int16, 4: torch.int32, 8: torch.int64}.get(flat.element_size(), torch.uint8)
        )
    elif flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    stride = max(1, -(-flat.numel() // SAMPLE))
    sample = flat[::stride].to(torch.int64)
    total = (sample * _sample_weights(flat.device)[: sample.numel()]).sum()
    for chunk in flat.split(CHUNK):
        total = total + chunk.to(torch.int64).sum() * 0x5851F42D4C957F2D
    return total


def _model_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor | None:
    for key in ("input_ids", "inputs_embeds", "pixel_values", "input", "x"):
        value = kwargs.get(key)
        if isinstance(value, torch.Tensor):
            return value
    values = list(args) + list(kwargs.values())
    for value in values:
        if isinstance(value, torch.Tensor):
            return value
    # Lightning's DDP wrapper is called with (batch, batch_idx), the batch a list/dict: look inside
    for value in values:
        found = _first_tensor(value, NESTED_DEPTH)
        if found is not None:
            return found
    return None


def _first_tensor(value: Any, depth: int) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    if depth == 0:
        return None
    if isinstance(value, (list, tuple)):
        items = list(value[:NESTED_ITEMS])
    elif isinstance(value, Mapping):
        items = [value[k] for k in list(value)[:NESTED_ITEMS]]
    else:
        return None
    for item in items:
        found = _first_tensor(item, depth - 1)
        if found is not None:
            return found
    return None


def _forward_pre(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    # A watched model that is compiled loses these hooks (`move_hooks`); should one still be
    # traced, it stands down before touching what dynamo cannot trace (os.getpid, a Generator).
    if torch.compiler.is_compiling():
        return
    _read_input(module, args, kwargs)


@guarded("data")
def _read_input(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    global _running
    if not torch.is_grad_enabled() or _running is not None:
        return
    _running = module  # the outermost watched module: FSDP2 roots contain other watched modules
    x = _model_input(args, kwargs)
    labels = kwargs.get("labels")
    tokens = None
    if isinstance(labels, torch.Tensor) and not labels.is_floating_point():
        tokens = (labels != IGNORE_INDEX).sum()
    PROBE.steps.forward = {
        "samples": int(x.shape[0]) if x is not None and x.dim() > 0 else None,
        "tokens": tokens,
        "hash": input_hash(x) if x is not None else None,
        "shape": tuple(x.shape) if x is not None else (),
    }


def _forward_post(module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> None:
    global _running
    if torch.compiler.is_compiling():
        return
    if _running is module:
        _running = None


def watch_inputs(model: torch.nn.Module) -> None:
    _hooks[id(model)] = [
        model.register_forward_pre_hook(_forward_pre, with_kwargs=True),
        model.register_forward_hook(_forward_post, with_kwargs=True, always_call=True),
    ]


def move_hooks(model: torch.nn.Module, compiled: torch.nn.Module | None) -> None:
    """`model` is being compiled: its hooks would run inside the compiled frame, and any hook on a
    module makes `_call_impl` take the path dynamo cannot resume after DDP's own graph break (one
    more graph break per forward). They go to the compiled wrapper, which runs its hooks eagerly;
    an in-place `model.compile()` has no wrapper, and its inputs are not read."""
    handles = _hooks.pop(id(model), None)
    if handles is None:
        return
    for handle in handles:
        handle.remove()
    if compiled is not None:
        watch_inputs(compiled)


@dataclass
class _Draws:
    """One iteration of one sampler: indices drawn from it, optimizer steps it fed."""

    sampler: int
    drawn: int = 0
    steps: int = 0


@dataclass
class _Samplers:
    ids: weakref.WeakKeyDictionary[Any, int]  # sampler -> its number on this rank (weak: never kept alive)
    latest: dict[int, _Draws]  # sampler number -> its latest iteration
    last: _Draws | None = None  # the iteration drawn from last, anywhere
    last_step: int = 0  # the optimizer-step window of that draw


_samplers = _Samplers(weakref.WeakKeyDictionary(), {})


def _settle(now: int) -> None:
    """Credit the optimizer steps closed since the last draw to the iteration that drew last: the
    step a training loop takes after drawing a batch is fed by that batch's sampler."""
    if _samplers.last is not None and now > _samplers.last_step:
        _samplers.last.steps += now - _samplers.last_step
    _samplers.last_step = now


@guarded("data")
def _drawn(draws: _Draws) -> None:
    _settle(PROBE.step_index())
    draws.drawn += 1
    _samplers.last = draws


class _Indices:
    """The iterator `DistributedSampler.__iter__` returns, counting what is drawn from it."""

    __slots__ = ("_it", "_draws")

    def __init__(self, indices: list[int], draws: _Draws) -> None:
        self._it = iter(indices)
        self._draws = draws

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        index = next(self._it)
        draws = self._draws
        try:  # the common case, inline (one call per index): same iteration, same step window
            if _samplers.last is draws and PROBE.steps.step == _samplers.last_step:
                draws.drawn += 1
                return index
        except Exception:  # noqa: BLE001, S110 - anything odd goes the guarded way below
            pass
        _drawn(draws)
        return index

    def __length_hint__(self) -> int:
        return operator.length_hint(self._it)


@guarded("data")
def _sampler_epoch(sampler: DistributedSampler[Any], indices: list[int]) -> _Draws | None:
    sid = _samplers.ids.get(sampler)
    if sid is None:
        sid = _samplers.ids[sampler] = len(_samplers.latest)
        PROBE.emit(
            {
                "kind": "config",
                "what": "sampler",
                "step": PROBE.step_index(),
                "sampler": sid,
                "type": type(sampler).__name__,
                "shuffle": sampler.shuffle,
                "seed": sampler.seed,
                "drop_last": sampler.drop_last,
                "num_replicas": sampler.num_replicas,
                "rank": sampler.rank,
                "dataset_len": len(cast("Sized", sampler.dataset)),  # DistributedSampler needs len() too
            }
        )
    _settle(PROBE.step_index())
    prev = _samplers.latest.get(sid)
    draws = _samplers.latest[sid] = _Draws(sid)
    digest = hashlib.blake2b(",".join(map(str, indices)).encode(), digest_size=8).hexdigest()
    PROBE.emit(
        {
            "kind": "sampler",
            "step": PROBE.step_index(),
            "sampler": sid,
            "shuffle": bool(sampler.shuffle),
            "epoch": sampler.epoch,
            "n": len(indices),
            "hash": digest,
            "head": indices[:HEAD],
            "prev_drawn": prev.drawn if prev is not None else None,
            "prev_steps": prev.steps if prev is not None else None,
        }
    )
    return draws


def release() -> None:
    global _running
    _running = None
    _weights.clear()
    _hooks.clear()
    _samplers.last = None  # `latest` stays: its size numbers the samplers still alive


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def __iter__(self: Any) -> Any:
            if not PROBE.enabled("data"):
                return original(self)
            indices = list(original(self))
            draws = _sampler_epoch(self, indices)
            return iter(indices) if draws is None else _Indices(indices, draws)

        return __iter__

    patch(DistributedSampler, "__iter__", make)
