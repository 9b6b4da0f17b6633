"""DDP sync pattern and LOCAL/GLOBAL gradient norms, observed without touching the gradient path.

No comm hook: a hook of ours would replace the reducer's own arithmetic (it multiplies the bucket
by 1/world before the all-reduce, `allreduce_hook` divides after: different bits at world size 3;
under `Join` it divides by the ranks not yet joined), route the reduction through
`torch.distributed.all_reduce` (a script wrapping it sees more calls), and take DDP's one
`register_comm_hook` slot from a script that registers its own after the first backward. Instead:

* sync: DDP decides at forward time whether the next backward all-reduces (`_pre_forward`: grad
  enabled and `require_backward_grad_sync`, which `no_sync()` clears). A forward pre-hook on the
  DDP wrapper reads that state; the micro-step's `sync` is the number of buckets DDP reduces
  (from its logging data, re-read when the buckets are rebuilt), 0 when it does not sync.
* LOCAL: `register_post_accumulate_grad_hook` on every trainable parameter fires inside
  AccumulateGrad, before the reducer's own hook on the same node copies the gradient into its
  bucket, so `.grad` holds this rank's gradient accumulated since the last sync (checked on
  torch 2.13 at world size 3, with and without `gradient_as_bucket_view`, several buckets).
  Read only on synced micro-steps; ‖·‖ per parameter, squared and summed after the backward.
* GLOBAL: when the outermost `backward` returns, DDP's finalize has copied the averaged gradient
  into `.grad` (or it is the bucket view): its squared norm over the model's parameters.

Both reads are `vector_norm(dtype=float32)` of a tensor the program already has; nothing is
written, no collective is issued, so the arithmetic is DDP's own whatever hook, divisor or
`Join` the script uses. Compiled autograd (`optimize_ddp="python_reducer"`) traces
post-accumulate hooks: they return at once while dynamo traces (`torch.compiler.is_compiling`).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from ddp_doctor.probe.state import PROBE, guarded

# key (a small int per DDP model) -> the model, by weak reference; the key is what hooks close over
_models: dict[int, weakref.ref[DistributedDataParallel]] = {}
_handles: list[Any] = []
_buckets: dict[int, tuple[bool, int]] = {}  # key -> (buckets rebuilt?, bucket count)
_armed: set[int] = set()  # models whose latest forward prepared a gradient sync
_forward_hooks: dict[int, Any] = {}  # key -> handle of the forward pre-hook that arms it
_in_place: set[int] = set()  # compiled with `ddp.compile()`: sync read when the backward starts
_hooked: set[int] = set()  # id() of the parameters with a local hook (stepgrads.py sums over the same set)
# Steps whose `gradsync` record stepgrads.py writes: the first few and every SPARSE × `every`
# (a record holds one norm per parameter: kept few).
FIRST_STEPS = 3
SPARSE = 10


def due(step: int) -> bool:
    every = PROBE.options.every if PROBE.options is not None else 50
    return step < FIRST_STEPS or step % (SPARSE * every) == 0


def watching() -> bool:
    """A DDP model is watched: its parameters' gradients are replicas after each synced step."""
    return any(ref() is not None for ref in _models.values())


def watch(ddp: DistributedDataParallel) -> None:
    key = len(_models)
    _models[key] = weakref.ref(ddp)
    on_grad = functools.partial(_on_grad, key)
    for p in ddp.module.parameters():
        if p.requires_grad:
            _handles.append(p.register_post_accumulate_grad_hook(on_grad))
            _hooked.add(id(p))
    _forward_hooks[key] = ddp.register_forward_pre_hook(functools.partial(_forward_pre, key))


def move_hooks(ddp: DistributedDataParallel, compiled: torch.nn.Module | None) -> None:
    """`ddp` is being compiled (see data.move_hooks for why no hook may stay on it): the forward
    pre-hook moves to the compiled wrapper, whose hooks run eagerly. After an in-place
    `ddp.compile()` there is no wrapper: the sync state is read when the backward starts, which
    is what DDP used unless the forward ran outside the `no_sync()` the backward runs in."""
    for key, ref in _models.items():
        if ref() is ddp and key in _forward_hooks:
            _forward_hooks.pop(key).remove()
            if compiled is not None:
                _forward_hooks[key] = compiled.register_forward_pre_hook(functools.partial(_forward_pre, key))
            else:
                _in_place.add(key)


def _forward_pre(key: int, module: torch.nn.Module, args: Any) -> None:
    if torch.compiler.is_compiling():  # traced after all (see move_hooks): stand down, no graph break
        return
    _arm(key)


@guarded("gradsync")
def _arm(key: int) -> None:
    ddp = _models[key]()
    if ddp is not None and torch.is_grad_enabled() and ddp.require_backward_grad_sync:
        _armed.add(key)


def _on_grad(key: int, param: torch.Tensor) -> None:
    if torch.compiler.is_compiling():
        return
    _observe_local(key, param)


@guarded("gradsync")
def _observe_local(key: int, param: torch.Tensor) -> None:
    micro = PROBE.steps.current
    if micro is None or key not in micro.synced or param.grad is None:
        return
    micro.local_norms.append(_norm(param.grad))
    micro.local_dots.append(dot(param.grad, param))


@guarded("gradsync")
def begin_backward(micro: Any) -> None:
    """The backward about to run reduces the gradients of the models armed by their forward."""
    for key in _in_place:
        ddp = _models[key]()
        if ddp is not None and ddp.require_backward_grad_sync:
            _armed.add(key)
    micro.synced = frozenset(_armed)
    _armed.clear()


@guarded("gradsync")
def end_backward(micro: Any) -> None:
    """After the outermost backward: `.grad` holds the reduced (global averaged) gradient."""
    if micro.local_norms:  # one value per micro-step: the per-parameter norms, squared and summed
        micro.local.append((None, _sum_sq(micro.local_norms, fused=False)))
        micro.local_norms = []
    if micro.local_dots:
        micro.local_dot = torch.stack(micro.local_dots).sum()
        micro.local_dots = []
    for key in micro.synced:
        ddp = _models[key]()
        if ddp is None:
            continue
        micro.sync += _bucket_count(key, ddp)
        grads = [p.grad for p in ddp.module.parameters() if p.requires_grad and p.grad is not None]
        if grads:
            micro.global_.append(_sum_sq(grads, fused=True))


def dot(g: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """⟨g, p⟩ in float32: linear in g, and p is the same on every replica, so the reduced
    gradient's ⟨ḡ, p⟩ is the mean of the ranks' local ones (stepgrads.py, gradient scale)."""
    g, p = g.detach(), p.detach()
    if g.dtype == p.dtype == torch.float32 and g.is_contiguous() and p.is_contiguous():
        return torch.dot(g.reshape(-1), p.reshape(-1))  # no temporary of the parameter's size
    return (g.float() * p.float()).sum()


def _norm(t: torch.Tensor) -> torch.Tensor:
    norm: torch.Tensor = torch.linalg.vector_norm(t.detach(), dtype=torch.float32)
    return norm


def _sum_sq(tensors: list[torch.Tensor], *, fused: bool) -> torch.Tensor:
    """Σ‖t‖² (fused: of gradients, via one `_foreach_norm` per device; else `tensors` are norms)."""
    by_device: dict[torch.device, list[torch.Tensor]] = {}
    for t in tensors:
        by_device.setdefault(t.device, []).append(t.detach())
    totals = []
    for group in by_device.values():
        norms = list(torch._foreach_norm(group, 2, dtype=torch.float32)) if fused else group
        totals.append(torch.stack(norms).square().sum())
    return totals[0] if len(totals) == 1 else torch.stack([t.cpu() for t in totals]).sum()


def _bucket_count(key: int, ddp: DistributedDataParallel) -> int:
    """Buckets DDP all-reduces per synced backward (its logging data; re-read once rebuilt)."""
    rebuilt = bool(getattr(ddp, "_has_rebuilt_buckets", False))
    cached = _buckets.get(key)
    if cached is not None and cached[0] == rebuilt:
        return cached[1]
    sizes = str(ddp._get_ddp_logging_data().get("bucket_sizes", ""))
    count = max(1, len([s for s in sizes.split(",") if s.strip()]))
    _buckets[key] = (rebuilt, count)
    return count


def release() -> None:
    for handle in _handles:
        handle.remove()
    _handles.clear()
    _models.clear()
    _buckets.clear()
    _armed.clear()
    _forward_hooks.clear()
    _in_place.clear()
    _hooked.clear()
