"""Rollups at the source: every R optimizer steps, a `rollup` record of the window (rundir/rollups.py),
and its line in the rank's rollup index (rundir/rollup_index.py).

Fed the records this rank writes (a listener on `Probe.emit`), after they are written: it reads
plain Python numbers the step record already holds, touches no tensor, issues no collective
and changes nothing the program computes. R is `ProbeOptions.rollup_every` (env
DDP_DOCTOR_ROLLUP_EVERY, default 100, 0: off). The open window is written at exit (`finish`), just
before the `end` record. Memory: one window's statistics, the spike rule's trailing 50 values
per screened series, and the byte ranges of the window's non-step lines.

The index (RUN/ranks/rollup-NNNNN.jsonl) gets each rollup again with the bytes of its window in the
rank file, so the report finds the rollups without scanning the rank file and reads raw only the
windows it needs. Its writes are a separate instrument (`rollup_index`): a failure there (a full
disk) stops the index, is recorded once as a `probe_error`, and leaves the rollups and everything
else running; the report then reads the steps after the last indexed window raw.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ddp_doctor.probe.state import PROBE, guarded
from ddp_doctor.rundir.rollup_index import Indexer, header, index_path
from ddp_doctor.rundir.rollups import RollupAccumulator

_state: dict[str, Any] = {}


def every() -> int:
    options = PROBE.options
    return options.rollup_every if options is not None else 0


def install() -> None:
    if every() > 0 and _listen not in PROBE.listeners:
        PROBE.listeners.append(_listen)


def _accumulator() -> RollupAccumulator | None:
    acc: RollupAccumulator | None = _state.get("acc")
    if acc is None and PROBE.recorder is not None and PROBE.recorder.path is not None:
        from ddp_doctor.rundir.records import rank_of_file_name

        rank = rank_of_file_name(PROBE.recorder.path.name)
        acc = _state["acc"] = RollupAccumulator(rank=rank if rank is not None else -1, every=every())
        _state["spans"] = Indexer()
    return acc


@guarded("rollup")
def _listen(record: dict[str, Any]) -> None:
    recorder = PROBE.recorder
    span = recorder.last_span if recorder is not None else None
    kind = record.get("kind")
    if kind == "rollup":  # our own record: its bytes end the window (_write)
        return
    if kind != "step":
        spans: Indexer | None = _state.get("spans")
        if spans is not None and span is not None:
            spans.line(span[0], span[1], str(kind))
        return
    acc = _accumulator()
    if acc is None:
        return
    if span is not None:
        _state["spans"].line(span[0], span[1], "step")
    for done in acc.feed(record):
        _write(done)


def _write(rollup: dict[str, Any]) -> None:
    """The rollup into the rank file, then its line into the index."""
    PROBE.emit(rollup)
    recorder = PROBE.recorder
    span = recorder.last_span if recorder is not None else None
    if span is not None:
        spans: Indexer = _state["spans"]
        spans.line(span[0], span[1], "rollup")
        _index(spans.close(rollup, span[1]))


@guarded("rollup_index")
def _index(line: dict[str, Any]) -> None:
    from ddp_doctor.rundir.records import encode

    fd = _state.get("index_fd")
    if fd is None:
        recorder = PROBE.recorder
        if recorder is None or recorder.ino is None or line.get("rank", -1) < 0:
            return
        path = index_path(recorder.run_dir, int(line["rank"]))
        # a new file per process (O_TRUNC: an earlier attempt's index indexes a file moved aside);
        # O_NOFOLLOW: a planted symlink is refused, never followed
        fd = os.open(
            path,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0),
            0o600,
        )
        _state["index_fd"] = fd
        _write_all(fd, encode(header(int(line["rank"]), int(line["every"]), recorder.ino)))
    _write_all(fd, encode(line))


def _write_all(fd: int, line: bytes) -> None:
    written = os.write(fd, line)
    if written < len(line):  # a full disk inside the line: cut it off, the index ends before it
        os.ftruncate(fd, os.fstat(fd).st_size - written)
        raise OSError(f"rollup index: short write ({written} of {len(line)} bytes)")


@guarded("rollup")
def finish() -> None:
    """Write the open window's rollup (at exit, before `end`)."""
    acc = _state.get("acc")
    if acc is not None:
        done = acc.flush()
        if done is not None:
            _write(done)
    _close_index()


def _close_index() -> None:
    fd = _state.pop("index_fd", None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def release() -> None:
    _close_index()
    _state.clear()
