"""Sync pattern and LOCAL/GLOBAL gradient norms from a DDP communication hook.

DDP calls the hook once per gradient bucket, only on micro-steps where gradient sync is on, so
the number of calls per micro-step is the sync pattern: (0, 0, 0, k) with `no_sync`, (k, k, k, k)
without. Inside the hook the bucket buffer before the all-reduce holds this rank's LOCAL gradient
(accumulated over the micro-steps since the last sync) and after it the GLOBAL averaged gradient;
their squared L2 norms, summed over buckets, matched a direct computation exactly (docs/probe.md, measured facts).

Numerics are unchanged: our hook does what DDP's built-in reduction does, i.e. the documented
`allreduce_hook` (torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py): divide by the
group size, then all-reduce with SUM. A hook the user registers is wrapped, not replaced. DDP
accepts one hook, only before the first backward, so ours is registered lazily at the first
backward of each model (instruments/backward.py) unless the user registered one by then.
The norm uses `vector_norm(dtype=float32)`: `pow(2).sum()` was ~9x slower (docs/probe.md, measured facts).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ddp_doctor.probe.state import PROBE, guarded, patch
from ddp_doctor.probe.steps import sq_norm

# DDP models waiting for our hook, and the ones that must not get one (a built-in C++ hook is set).
_pending: list[weakref.ref[DistributedDataParallel]] = []
_hooked: weakref.WeakSet[Any] = weakref.WeakSet()


def watch(ddp: DistributedDataParallel) -> None:
    _pending.append(weakref.ref(ddp))


@guarded("commhook")
def register_pending() -> None:
    while _pending:
        ddp = _pending.pop()()
        if ddp is None or ddp in _hooked:
            continue
        _hooked.add(ddp)
        # The process group travels as the hook's state (as for DDP's own allreduce_hook), so the
        # hook closes over nothing of the user's.
        register = DistributedDataParallel.register_comm_hook.__ddp_doctor_original__  # type: ignore[attr-defined]  # set by state.patch
        register(ddp, ddp.process_group, _make_hook(None))


@guarded("commhook")
def _observe_local(bucket: Any) -> Any:
    micro = PROBE.steps.current
    if micro is None:  # a backward we did not see (torch.autograd.grad, compiled autograd)
        return None
    micro.sync += 1
    micro.local.append((bucket.index(), sq_norm(bucket.buffer())))
    return micro


@guarded("commhook")
def _observe_global(micro: Any, reduced: Any) -> None:
    tensor = reduced[0] if isinstance(reduced, (list, tuple)) else reduced
    micro.global_.append(sq_norm(tensor))


def _make_hook(user: tuple[Callable[..., Any], Any] | None) -> Callable[..., Any]:
    """Our hook; `state` is the process group when it is ours, the user's state is in `user`."""

    # No annotations: DDP compares them with dist.GradBucket, and this module's are strings.
    # Unannotated on purpose: DDP compares a hook's annotations with dist.GradBucket / Future
    # objects, and this module's annotations are strings.
    def ddp_doctor_hook(state, bucket):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
        if not isinstance(bucket, dist.GradBucket):
            # Compiled autograd's python reducer passes (grad, param) tuples: not observable here.
            return _reduce(user, state, bucket)
        micro = _observe_local(bucket)
        fut = _reduce(user, state, bucket)
        if micro is None:
            return fut
        # The reducer keeps the last future (and so this callback) after the step; a weak
        # reference lets the micro-step's tensors go when the step record is written.
        micro_ref = weakref.ref(micro)

        def observe(done: torch.futures.Future[torch.Tensor]) -> Any:
            value = done.value()
            live = micro_ref()
            if live is not None:
                _observe_global(live, value)
            return value

        return fut.then(observe)

    return ddp_doctor_hook


def _reduce(
    user: tuple[Callable[..., Any], Any] | None, state: Any, bucket: Any
) -> torch.futures.Future[torch.Tensor]:
    if user is not None:
        hook, user_state = user
        fut: torch.futures.Future[torch.Tensor] = hook(user_state, bucket)
        return fut
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    return allreduce_hook(state, bucket)


def release() -> None:
    _pending.clear()


def install() -> None:
    def make_register(original: Callable[..., Any]) -> Callable[..., Any]:
        def register_comm_hook(self: Any, state: object, hook: Callable[..., Any]) -> Any:
            if not PROBE.enabled("commhook") or self in _hooked:
                return original(self, state, hook)
            _hooked.add(self)
            return original(self, state, _make_hook((hook, state)))

        return register_comm_hook

    def make_builtin(original: Callable[..., Any]) -> Callable[..., Any]:
        def _register_builtin_comm_hook(self: Any, comm_hook_type: Any) -> Any:
            _hooked.add(self)  # a C++ hook cannot be wrapped: this model reports sync 0 / null norms
            return original(self, comm_hook_type)

        return _register_builtin_comm_hook

    patch(DistributedDataParallel, "register_comm_hook", make_register)
    patch(DistributedDataParallel, "_register_builtin_comm_hook", make_builtin)
