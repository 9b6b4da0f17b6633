"""The map of one rank file: its rollups computed from the raw `step` records, with their bytes.

Streamed line by line (memory: one line and one window), with the accumulator the probe uses
(rundir/rollups.py) and the index lines the probe writes (rundir/rollup_index.py), so a run recorded
without rollups, or with another R, gets the same rollups and the same index. Used by `ddp-doctor
summarize` (rundir/summarize.py) and by the report's rollup path for a rank whose index is missing
or unusable (rundir/rollup_read.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddp_doctor.core.safe_io import open_regular
from ddp_doctor.rundir import records
from ddp_doctor.rundir.rollup_index import Indexer
from ddp_doctor.rundir.rollups import RollupAccumulator

MAX_LINE = 16 * 2**20  # a longer line is damage: skipped, never held whole
_STEP = records.line_prefix("step")
_ROLLUP = records.line_prefix("rollup")


@dataclass
class RankRollups:
    rank: int
    rollups: list[dict[str, Any]] = field(default_factory=list)  # index entries: rollups with `at`, `others`
    problems: list[str] = field(default_factory=list)
    reused: bool = False
    ino: int | None = None


def lines(path: Path, problems: list[str], start: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """Every complete line of a rank file from byte ``start`` as (start, end, line), streamed; a line
    longer than MAX_LINE is damage: skipped (and counted), never held whole."""
    try:
        fd, st = open_regular(path)
    except OSError as exc:
        problems.append(f"{path.name}: {exc}")
        return
    bad = 0
    with os.fdopen(fd, "rb") as f:
        f.seek(start)
        remaining = st.st_size - start  # what was there at open: a growing file cannot keep us reading
        at = start
        while remaining > 0:
            line = f.readline(min(MAX_LINE, remaining))
            if not line:
                break
            remaining -= len(line)
            if not line.endswith(b"\n"):
                if remaining <= 0:  # a truncated last line (killed or still writing): not a record
                    break
                bad += 1  # over MAX_LINE: skip to its end
                end = at + len(line)
                while remaining > 0:
                    rest = f.readline(min(MAX_LINE, remaining))
                    remaining -= len(rest)
                    end += len(rest)
                    if not rest or rest.endswith(b"\n"):
                        break
                at = end
                continue
            yield at, at + len(line), line
            at += len(line)
    if bad:
        problems.append(f"{path.name}: {bad} over-long line(s) skipped")


def _step(line: bytes, problems: list[str]) -> dict[str, Any] | None:
    """A `step` line as the reader sanitizes it; None (counted as damage) when it is not one."""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(rec, dict):
        return None
    return records.sanitize(rec, [])


def rollups_of_file(path: Path, rank: int, every: int) -> RankRollups:
    """The rollups of one rank file, computed from its raw step records, with their bytes (the
    rollup index's entries, rundir/rollup_index.py)."""
    out = RankRollups(rank)
    try:
        out.ino = os.stat(path, follow_symlinks=False).st_ino
    except OSError:
        out.ino = None
    acc = RollupAccumulator(rank=rank, every=every)
    spans = Indexer()
    damaged = 0
    for a, b, line in lines(path, out.problems):
        if not line.startswith(_STEP):
            spans.line(a, b, "rollup" if line.startswith(_ROLLUP) else "other")
            continue
        rec = _step(line, out.problems)
        done = acc.feed(rec) if rec is not None else []
        damaged += rec is None
        # a window closes before the step that opens the next one, or with its own last step
        for d in done:
            if d["last"] != rec.get("step"):  # type: ignore[union-attr]
                out.rollups.append(spans.close(d, a))
        spans.line(a, b, "step")
        for d in done:
            if d["last"] == rec.get("step"):  # type: ignore[union-attr]
                out.rollups.append(spans.close(d, b))
    last = acc.flush()
    if last is not None:
        out.rollups.append(spans.close(last, spans.cursor))
    if damaged:
        out.problems.append(f"{path.name}: {damaged} damaged step line(s) skipped")
    return out
