"""Rollups at the source: every R optimizer steps, a `rollup` record of the window (rundir/rollups.py).

Fed the `step` records this rank writes (a listener on `Probe.emit`), after they are written: it
reads plain Python numbers the step record already holds, touches no tensor, issues no collective
and changes nothing the program computes. R is `ProbeOptions.rollup_every` (env
DDP_DOCTOR_ROLLUP_EVERY, default 100, 0: off). The open window is written at exit (`finish`), just
before the `end` record. Memory: one window's statistics and the spike rule's trailing 50 values
per screened series.
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.probe.state import PROBE, guarded
from ddp_doctor.rundir.rollups import RollupAccumulator

_state: dict[str, RollupAccumulator] = {}


def every() -> int:
    options = PROBE.options
    return options.rollup_every if options is not None else 0


def install() -> None:
    if every() > 0 and _listen not in PROBE.listeners:
        PROBE.listeners.append(_listen)


def _accumulator() -> RollupAccumulator | None:
    acc = _state.get("acc")
    if acc is None and PROBE.recorder is not None and PROBE.recorder.path is not None:
        from ddp_doctor.rundir.records import rank_of_file_name

        rank = rank_of_file_name(PROBE.recorder.path.name)
        acc = _state["acc"] = RollupAccumulator(rank=rank if rank is not None else -1, every=every())
    return acc


@guarded("rollup")
def _listen(record: dict[str, Any]) -> None:
    if record.get("kind") != "step":
        return
    acc = _accumulator()
    if acc is None:
        return
    for done in acc.feed(record):
        PROBE.emit(done)


@guarded("rollup")
def finish() -> None:
    """Write the open window's rollup (at exit, before `end`)."""
    acc = _state.get("acc")
    if acc is not None:
        done = acc.flush()
        if done is not None:
            PROBE.emit(done)


def release() -> None:
    _state.clear()
