"""The rollup index of one rank file: RUN/ranks/rollup-NNNNN.jsonl (docs/run-format.md, `rollup`).

It lets the report read a rank file's rollups without scanning the rank file, and then read raw only
the byte ranges of the windows it needs (rundir/rollup_read.py):

* line 1, a `rollup_index` record: ``{"kind": "rollup_index", "schema": INDEX_SCHEMA, "rank": r,
  "every": R, "ino": N, "file": "rank-NNNNN.jsonl"}`` — the inode of the rank file it indexes (a
  rank file replaced by another run or a restart no longer matches);
* then one line per window, in window order: the window's `rollup` record plus ``at`` — the bytes
  ``[start, end)`` of the rank file that hold the window (from the end of the previous window's
  bytes to the end of its own rollup line, or its last step line when the rollup was computed
  afterwards) — and ``others`` — the ``[start, end)`` of the lines in it that are neither `step`
  nor `rollup` records (header, config, sampler, replica, ...), merged where adjacent.

Written by the probe as the run goes (probe/instruments/rollup.py, appended after each rollup) and
by `ddp-doctor summarize` (rundir/summarize.py, whole, for runs recorded without it). The bytes after
the last indexed window (the `end` record; every step of a run killed or still running after its
last rollup) are the *tail*: the report reads them raw.

Nothing here imports torch or numpy (the probe imports it inside training processes).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddp_doctor.core.safe_io import open_regular, read_fd
from ddp_doctor.rundir import records
from ddp_doctor.rundir.rollups import SCHEMA as ROLLUP_SCHEMA

INDEX_SCHEMA = "ddp-doctor.rollup-index/1"
# An index holds ~1.7 KB per window: 256 MiB is 150,000 windows (15 M steps at R = 100). A larger
# file is not an index this reader trusts with its memory.
MAX_INDEX_BYTES = 256 * 2**20
MAX_WINDOW = 1 << 31


def index_path(run_dir: Path | str, rank: int) -> Path:
    return Path(run_dir) / records.RANKS_DIR / f"rollup-{rank:05d}.jsonl"


def header(rank: int, every: int, ino: int) -> dict[str, Any]:
    return records.record(
        "rollup_index",
        schema=INDEX_SCHEMA,
        rank=rank,
        every=every,
        ino=ino,
        file=records.rank_file_name(rank),
    )


# `screen` flags: why a window's raw records may matter (rundir/rollup_read.py reads those windows raw)
NONFINITE, SKIPPED, LOSS_SPIKE, GRAD_SPIKE, SHAPE = 1, 2, 4, 8, 16
# screen key -> series (its STAT without the first/last non-finite steps)
SCREEN_STATS = {
    "loss": "loss",
    "gsq": "gsq_global",
    "gsql": "gsq_local",
    "samples": "samples",
    "tokens": "tokens",
}


def screen_of(rollup: dict[str, Any], previous_shape: str | None) -> dict[str, Any]:
    """What the report needs of every window to choose the ones it reads raw, in a few numbers (the
    index line puts it before the full statistics, so the report parses only this part).

    ``flags``: NONFINITE (a non-finite value or a `nonfinite` record), SKIPPED (a skipped step or
    found_inf), LOSS_SPIKE/GRAD_SPIKE (the per-rank spike screen marked a step), SHAPE (more than one
    step structure in the window, or another than the previous window's: rollups.shape_of);
    ``digest``: the window's input digest; ``shape``: its structure digest; ``loss``, ``gsq``,
    ``gsql``, ``samples``, ``tokens``: [n, n_nonfinite, Σx, Σx², min, max] of the local loss, the
    global and local ‖g‖² and the samples and tokens per step (B_simple over the whole run from these
    sums: analysis/quantities/gns.py); ``lr``: [min, max]."""
    stats: dict[str, Any] = rollup.get("stats") or {}
    spikes: dict[str, Any] = rollup.get("spikes") or {}
    flags = 0
    if any(isinstance(v, list) and len(v) > 1 and v[1] for v in stats.values()) or _sum(stats, "nonfinite"):
        flags |= NONFINITE
    if _sum(stats, "skipped") or _sum(stats, "found_inf"):
        flags |= SKIPPED
    if (spikes.get("loss") or [0])[0]:
        flags |= LOSS_SPIKE
    if (spikes.get("gsq_global") or [0])[0]:
        flags |= GRAD_SPIKE
    distinct, shape = (rollup.get("shape") or [0, None])[:2]
    if distinct != 1 or (previous_shape is not None and shape != previous_shape):
        flags |= SHAPE
    out: dict[str, Any] = {"flags": flags, "digest": (rollup.get("inputs") or [0, None])[1], "shape": shape}
    for key, series in SCREEN_STATS.items():
        st = stats.get(series)
        out[key] = list(st[:6]) if isinstance(st, list) and len(st) >= 6 else None
    lr = stats.get("lr")
    out["lr"] = [lr[4], lr[5]] if isinstance(lr, list) and len(lr) >= 6 else None
    return out


def _sum(stats: dict[str, Any], name: str) -> float:
    st = stats.get(name)
    return st[2] if isinstance(st, list) and len(st) > 2 and isinstance(st[2], (int, float)) else 0.0


class Indexer:
    """The index lines of one rank file, fed every line of the file in order.

    ``line(start, end, kind)`` for each line (``kind``: "step", "rollup" or anything else); bytes
    never fed (a header and early records written before the probe could see them) count as other
    lines. ``close(rollup, end)`` ends the open window at byte ``end`` and returns its index line.
    """

    def __init__(self) -> None:
        self.start = self.cursor = 0
        self.others: list[list[int]] = []
        self.shape: str | None = None  # the previous window's structure digest

    def _other(self, a: int, b: int) -> None:
        if self.others and self.others[-1][1] == a:
            self.others[-1][1] = b
        else:
            self.others.append([a, b])

    def line(self, start: int, end: int, kind: str) -> None:
        if start > self.cursor:
            self._other(self.cursor, start)
        if kind not in ("step", "rollup"):
            self._other(start, end)
        self.cursor = max(self.cursor, end)

    def close(self, rollup: dict[str, Any], end: int) -> dict[str, Any]:
        if end > self.cursor:  # bytes between the last line fed and the end: other lines
            self._other(self.cursor, end)
        at, others = [self.start, max(end, self.start)], self.others
        self.start = self.cursor = at[1]
        self.others = []
        screen = screen_of(rollup, self.shape)
        self.shape = screen["shape"]
        return entry(rollup, at, others, screen)


# The index line's fields in this order: what the report reads first, the full statistics last.
_FIRST = ("kind", "schema", "rank", "every", "window", "first", "last", "steps", "at", "others", "screen")
CUT = b',"inputs":'  # the report parses each line up to here (rundir/rollup_read.py)


def entry(
    rollup: dict[str, Any], at: list[int], others: list[list[int]], screen: dict[str, Any]
) -> dict[str, Any]:
    """One index line: the rollup record with its bytes and screen, the screen before the statistics."""
    full = {**rollup, "at": at, "others": others, "screen": screen}
    order = (*_FIRST, "inputs", "shape", "spikes")
    return records.check(
        {k: full[k] for k in order if k in full} | {k: v for k, v in full.items() if k not in order}
    )


@dataclass
class RankIndex:
    """One rank's index as read and checked: the rollups in window order and their bytes."""

    rank: int
    every: int
    entries: list[dict[str, Any]] = field(default_factory=list)
    end: int = 0  # the indexed bytes end here; the rest of the rank file is the tail


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _span(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and _int(v[0]) and _int(v[1]) and 0 <= v[0] < v[1]


def check_entry(rec: Any, rank: int, every: int, start: int, size: int, after: int) -> str | None:
    """Why ``rec`` is not the next index line (window after ``after``, bytes from ``start``,
    within a rank file of ``size`` bytes); None when it is."""
    if not isinstance(rec, dict) or rec.get("kind") != "rollup":
        return "a line is not a rollup record"
    if rec.get("schema") != ROLLUP_SCHEMA or rec.get("rank") != rank or rec.get("every") != every:
        return "a rollup of another rank, schema or window length"
    got: list[Any] = [rec.get(k) for k in ("window", "first", "last", "steps")]
    if not all(_int(v) for v in got):
        return "a rollup without window, first, last and steps"
    w, first, last, steps = (int(v) for v in got)
    if not (
        after < w < MAX_WINDOW
        and w * every <= first <= last < (w + 1) * every
        and 1 <= steps <= every
        and first <= size  # a step takes a line of the rank file: no number sizes an allocation
    ):
        return f"window {w} out of order or with impossible steps"
    if not (isinstance(rec.get("stats"), dict) and isinstance(rec.get("spikes"), dict)):
        return f"window {w} without stats"
    at: Any = rec.get("at")
    if not _span(at) or at[0] != start or at[1] > size:
        return f"window {w}: its bytes {str(at)[:40]} do not follow the previous window's or lie beyond the rank file ({size} B)"
    others = rec.get("others")
    if not isinstance(others, list):
        return f"window {w}: no list of other lines"
    prev = at[0]
    for span in others:
        if not _span(span) or span[0] < prev or span[1] > at[1]:
            return f"window {w}: other lines outside its bytes"
        prev = span[1]
    return None


def read_index(run_dir: Path, rank: int, rank_file: os.stat_result) -> tuple[RankIndex | None, str | None]:
    """The index of ``rank`` if it indexes this rank file (``rank_file``: its stat), else (None, why).

    A truncated last line (the probe killed while appending) is ignored; every other departure from
    the format (a line that is not JSON, a window out of order, bytes that do not follow on or lie
    beyond the rank file, another inode) makes the whole index unusable: the report reads that
    rank file raw instead and says why. Never raises on the file's content."""
    path = index_path(run_dir, rank)
    if not os.path.lexists(path):
        return None, "no rollup index"
    try:
        fd, st = open_regular(path)
    except OSError as exc:
        return None, f"rollup index unreadable ({exc})"
    try:
        if st.st_size > MAX_INDEX_BYTES:
            return None, f"rollup index larger than {MAX_INDEX_BYTES} bytes"
        raw = read_fd(fd, st.st_size)
    finally:
        os.close(fd)
    lines = raw.split(b"\n")
    lines.pop()  # b"" after the last newline, or a truncated last line: ignored
    if not lines:
        return None, "empty rollup index"
    try:
        head = json.loads(lines[0])
    except (ValueError, RecursionError):
        return None, "rollup index header is not JSON"
    if not (
        isinstance(head, dict)
        and head.get("kind") == "rollup_index"
        and records.schema_problem(head.get("schema"), INDEX_SCHEMA) is None
        and head.get("rank") == rank
        and _int(head.get("every"))
        and head["every"] > 0
    ):
        return None, "rollup index header of another rank or schema"
    if head.get("ino") != rank_file.st_ino:
        return None, "stale rollup index (it indexes another rank file: the inode differs)"
    out = RankIndex(rank=rank, every=head["every"])
    start, after = 0, -1
    for n, line in enumerate(lines[1:], start=2):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            return None, f"rollup index line {n} is not JSON"
        why = check_entry(rec, rank, out.every, start, rank_file.st_size, after)
        if why is not None:
            return None, f"rollup index line {n}: {why}"
        out.entries.append(rec)
        start, after = rec["at"][1], rec["window"]
    out.end = start
    return out, None
