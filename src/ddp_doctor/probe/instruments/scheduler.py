"""LR scheduler steps per optimizer step (`sched_steps`) and the scheduler type.

`LRScheduler.step` is wrapped on the base class. The step the constructor takes (`_is_initial`)
is not counted, nor are inner steps of SequentialLR/ChainedScheduler (outermost call only).
More than one scheduler step per optimizer step means the schedule runs per micro-batch.
Note: accelerate's AcceleratedScheduler deliberately steps `num_processes` times per optimizer
step (so a schedule written for one process ends on time); that is recorded as it happens.
"""

from __future__ import annotations

import weakref
from typing import Any

from torch.optim.lr_scheduler import LRScheduler

from ddp_doctor.probe.state import PROBE, Nesting, guarded, patch

_nesting = Nesting()
_configured: "weakref.WeakSet[LRScheduler]" = weakref.WeakSet()


@guarded("scheduler")
def _stepped(scheduler: LRScheduler) -> None:
    if getattr(scheduler, "_is_initial", False):
        return
    if scheduler not in _configured:
        _configured.add(scheduler)
        PROBE.emit({"kind": "config", "what": "scheduler", "step": PROBE.step_index(),
                    "type": type(scheduler).__name__})
    PROBE.steps.sched_steps += 1


def install() -> None:
    def make(original):
        def step(self, *args: Any, **kwargs: Any) -> None:
            with _nesting.enter() as outer:
                try:
                    return original(self, *args, **kwargs)
                finally:
                    if outer:
                        _stepped(self)

        return step

    patch(LRScheduler, "step", make)
