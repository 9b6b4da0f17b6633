"""LR scheduler steps per optimizer step (`sched_steps`) and the scheduler type.

`LRScheduler.step` is wrapped on the base class. The step the constructor takes (`_is_initial`)
is not counted, nor are inner steps of SequentialLR/ChainedScheduler (outermost call only).
More than one scheduler step per optimizer step means the schedule runs per micro-batch.
Note: accelerate's AcceleratedScheduler deliberately steps `num_processes` times per optimizer
step when `split_batches=False` (so a schedule written for one process ends on time); that is
recorded as it happens, and the config record says so (`wrapper`, `split_batches`) so the analysis
can expect `num_processes` steps instead of 1 (docs/report.md).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from torch.optim.lr_scheduler import LRScheduler

from ddp_doctor.probe.state import PROBE, Nesting, guarded, patch

_nesting = Nesting()
_configured: weakref.WeakSet[LRScheduler] = weakref.WeakSet()
# accelerate's wrapper class; it is not an LRScheduler, so it is found as the caller of step().
ACCELERATE_WRAPPER = "AcceleratedScheduler"
# Frames between the wrapper's loop and `_stepped`: our patched step, the guard, and slack for
# other wrappers of step (ours walks once per scheduler, at its first step).
_CALLER_DEPTH = 8


@guarded("scheduler")
def _stepped(scheduler: LRScheduler) -> None:
    if getattr(scheduler, "_is_initial", False):
        return
    if scheduler not in _configured:
        _configured.add(scheduler)
        PROBE.emit(
            {
                "kind": "config",
                "what": "scheduler",
                "step": PROBE.step_index(),
                "type": type(scheduler).__name__,
                **_wrapper(scheduler),
            }
        )
    PROBE.steps.sched_steps += 1


def _wrapper(scheduler: LRScheduler) -> dict[str, Any]:
    """`{"wrapper": "AcceleratedScheduler", "split_batches": bool}` when accelerate's wrapper is
    the caller of this step, else {}."""
    frame = sys._getframe(1)
    for _ in range(_CALLER_DEPTH):
        if frame.f_back is None:
            break
        frame = frame.f_back
        owner = frame.f_locals.get("self")
        if type(owner).__name__ == ACCELERATE_WRAPPER and getattr(owner, "scheduler", None) is scheduler:
            return {
                "wrapper": ACCELERATE_WRAPPER,
                "split_batches": bool(getattr(owner, "split_batches", False)),
            }
    return {}


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def step(self: Any, *args: Any, **kwargs: Any) -> Any:
            with _nesting.enter() as outer:
                try:
                    return original(self, *args, **kwargs)
                finally:
                    if outer:
                        _stepped(self)

        return step

    patch(LRScheduler, "step", make)
