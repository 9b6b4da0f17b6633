"""The report's rollup path: rollups for the bulk of a run, raw records only for the windows that matter.

For a run whose rank files carry a rollup index (rundir/rollup_index.py: written by the probe as the
run goes, or by `ddp-doctor summarize`), the report does not scan the rank files. In two passes over
the ranks, each in worker processes (one per core) when there is enough to read:

1. **Index** (:func:`_index_arrays`): each rank's index is read — only the part of each line before
   the full statistics, parsed by Arrow — and checked against its rank file (schema, rank, window
   order, bytes that follow on and lie within the file, the rank file's inode). A rank whose index
   is missing, damaged or stale gets its rollups computed from its rank file instead (streamed:
   the map of `summarize`), with a note. The windows of all ranks are then reduced (counts, sums,
   extremes per window over ranks).
2. **Selection** (:func:`select`): the windows read raw, each with its reasons — the first
   ``EARLY_STEPS`` steps (and the warmup while the lr rises: accumulation pattern, sampler, warmup
   and the checks that need a minimum of steps), the last window of every rank, every window whose
   screen flags on any rank (non-finite values, skipped / found_inf steps, a change of step
   structure, a spike mark of the global gradient norm) or on at least half its ranks (a spike mark
   of the local loss: one noisy rank of many does not make every window matter), with the windows
   before a spike (the spike rule's history), windows the screens of the reduced series mark (robust
   z > ``SCREEN_Z`` against the previous windows, of: the cross-rank mean loss, the mean excess of
   the ranks' window maxima over their means, the pooled within-window variance — a spike shared by
   the ranks adds to every rank's, so this one sharpens with the world size —, and the largest global
   gradient norm: a spike of the cross-rank mean within one rank's noise), windows where the ranks' input digests
   stop or start agreeing, the steps the user asked for (``--steps A-B``), and ``SAMPLE_WINDOWS``
   blocks of ``SAMPLE_BLOCK_STEPS`` steps spread evenly over the whole run (the statistical checks'
   unbiased sample, whatever else was chosen).
3. **Raw windows** (:func:`_read_windows`): each rank file is read with pread at the selected
   windows' bytes, every window's other lines (header, config, sampler, replica, ... records: all
   of them, wherever they are) and the tail (the steps after the last complete window: a run killed
   or still running). The steps found are checked against the index (each selected window's count,
   first and last step; no step of a window not selected): on a mismatch the rank file is read whole
   and cut to the same windows, with a note.

The checks then run on the steps read raw (analysis/quantities/series.py: a step axis with gaps)
and every finding's coverage says what the rollups screened (analysis/bulk.py). Memory: per rank,
the index's arrays (a few numbers per window) and the raw steps of the selected windows; never the
whole run's steps. docs/report.md, "Rollups and scale", has the measured cost and the differences
from the raw path.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ddp_doctor.core.catalog import limit
from ddp_doctor.core.safe_io import read_fd
from ddp_doctor.rundir import records, rollup_cache
from ddp_doctor.rundir.rankfile import (
    Problems,
    RankData,
    key_of,
    load_cache,
    open_regular,
    parse_rank,
    save_cache,
)
from ddp_doctor.rundir.rankfile.columns import _floats, take_steps, to_columns_many
from ddp_doctor.rundir.rankfile.scan import _arrow, file_problems, parse_rank_bytes
from ddp_doctor.rundir.rollup_index import (
    CUT,
    GRAD_SPIKE,
    INDEX_SCHEMA,
    LOSS_SPIKE,
    MAX_INDEX_BYTES,
    MAX_WINDOW,
    NONFINITE,
    SHAPE,
    SKIPPED,
    index_path,
)
from ddp_doctor.rundir.rollup_map import rollups_of_file
from ddp_doctor.rundir.rollups import DEFAULT_EVERY, SPIKE_WINDOW
from ddp_doctor.rundir.rollups import SCHEMA as ROLLUP_SCHEMA

# `report` takes the rollup path by itself (``--rollups auto``) when the rank files hold at least
# this many bytes and a rollup index exists: below it, reading everything raw takes seconds and is
# exact (docs/report.md, "Speed and scale").
ROLLUP_MIN_BYTES = 256 * 2**20
EARLY_STEPS = 200  # the noise band needs 63 steps, the skew test 50, clip-saturated 50 after warmup
SAMPLE_WINDOWS = 8  # blocks of the even sample
SAMPLE_BLOCK_STEPS = 50  # each block holds whole 21-step trend windows of the noise band
# A window read only for the even sample or for a spike's history is read in part when R is larger
# than what it is read for: the first steps of a sample block's last window (SAMPLE_BLOCK_STEPS in the
# block), the last steps of the farthest history window (SPIKE_WINDOW before the spike window, plus
# HISTORY_MARGIN: the report's spike rule refreshes its baseline every 5 steps, so a step's baseline
# may start up to 4 steps earlier; analysis/quantities/spikes.py STRIDE).
HISTORY_MARGIN = 5
# A window selected only by spike marks is read from SPIKE_WINDOW + HISTORY_MARGIN steps before the
# marks' first step (its history, into the window before only where it reaches there) to AFTER_SPIKE
# steps after their last: the grad-spike rule looks for a loss spike up to max_lag steps after a
# gradient spike, and the report's baseline, held for 5 steps, may extend an event up to 4 steps past
# the last step the per-step screen marked (HISTORY_MARGIN).
AFTER_SPIKE = int(limit("grad-spike", "max_lag")) + HISTORY_MARGIN
READ_IN_PART = True  # False: every selected window whole (the read before windows in part; tests, bench)
# The reduced-series screens: robust z against the previous SCREEN_HISTORY windows. A screen, not a
# verdict: it only decides what is read raw, so it sits below the spike rule's z of 6.
SCREEN_Z = 5.0
SCREEN_HISTORY = 20
MIN_SCREEN_HISTORY = 5
PARALLEL_MIN_BYTES = 32 * 2**20  # the reader's threshold for worker processes (rundir/reader.py)
_LINE_START = b'{"kind":'  # records.encode writes `kind` first

REASONS = {
    "first": "the first steps",
    "warmup": "the lr rises (warmup)",
    "last": "the last window",
    "nonfinite": "a non-finite value",
    "skipped": "a skipped step or found_inf",
    "spike": "a spike mark (per rank)",
    "before-spike": "history of the spike rule",
    "shape": "the step structure changes",
    "screen": "the reduced series' screen",
    "data": "the ranks' input digests change agreement",
    "requested": "requested (--steps)",
    "sample": "the even sample of the run",
}


class Part(NamedTuple):
    """A selected window read in part (:func:`parts`): ``head`` — its first ``k`` step records;
    ``tail`` — its last ``k``; ``span`` — ``k`` records from record ``skip`` on, only where the
    rank's window is full (R records: steps wR … wR + R − 1 in order; :func:`_applies`), else that
    rank's window is read whole."""

    mode: str
    k: int
    skip: int = 0


@dataclass
class RankWindows:
    """One rank's index as arrays (phase 1), or the rollups computed from its rank file."""

    rank: int
    every: int
    window: np.ndarray  # int64 [n], increasing
    first: np.ndarray
    last: np.ndarray
    steps: np.ndarray
    at: np.ndarray  # int64 [n, 2]
    others: np.ndarray  # int64 [k, 2] of every window
    flags: np.ndarray  # int64 [n]
    digest: np.ndarray  # uint64 [n], 0: none
    loss: np.ndarray  # float64 [n, 6]: n, n_nonfinite, Σ, Σx², min, max
    gsq: np.ndarray  # float64 [n, 6]
    gsql: np.ndarray  # float64 [n, 6]
    samples: np.ndarray  # float64 [n, 6]
    tokens: np.ndarray  # float64 [n, 6]
    lr: np.ndarray  # float64 [n, 2]: min, max
    # int64 [n, 4]: first and last step marked by the spike screen of the local loss and of the global
    # ‖g‖² (rollups.py `spikes`), -1 where the window has no such flag; a flagged window whose marks
    # cannot be read: its first and last step (the whole window)
    marks: np.ndarray
    tail: int  # the tail starts here (the steps after the last complete window)
    size: int
    ino: int
    note: str | None = None  # why the index was not used


@dataclass
class RollupView:
    """What the rollups say about the whole run, and which windows were read raw (RunData.rollups)."""

    every: int
    windows: int
    selected: dict[int, list[str]]  # window -> reasons (keys of REASONS)
    steps_total: int  # optimizer steps of the longest rank
    rank_steps: dict[int, int]  # steps recorded per rank (indexed windows + tail)
    raw_steps: int = 0  # steps of the longest rank read raw
    notes: list[str] = field(default_factory=list)
    # per window, over ranks: [n, n_nonfinite, Σ, Σx², min, max] of the local loss and global ‖g‖²
    loss: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    gsq: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    gsql: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    samples: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    ranks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # ranks per window
    window_steps: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64)
    )  # the longest rank's
    flags: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    indexed_steps: int = 0  # steps of the longest rank covered by its index
    sample: int = SAMPLE_WINDOWS  # windows of the even sample asked for
    requested: tuple[tuple[int, int], ...] = ()  # step ranges asked for (--steps)
    seconds: dict[str, float] = field(default_factory=dict)
    # windows read in part (:func:`parts`): window -> its Part
    parts: dict[int, Part] = field(default_factory=dict)
    # the even sample's block ends: window -> its first steps that belong to the sample (< R)
    sample_heads: dict[int, int] = field(default_factory=dict)

    def sampled(self, steps: np.ndarray) -> np.ndarray:
        """Which of these steps lie in the even sample: its windows, and of a block's last window
        only the steps that complete the block's SAMPLE_BLOCK_STEPS (the same steps whether that
        window was read whole for another reason or in part)."""
        windows = np.asarray([w for w, why in self.selected.items() if "sample" in why], dtype=np.int64)
        s = np.asarray(steps, dtype=np.int64)
        w = s // self.every
        out: np.ndarray = np.isin(w, windows)
        for win, k in self.sample_heads.items():
            out &= ~((w == win) & (s - win * self.every >= k))
        return out

    def to_json(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for rs in self.selected.values():
            for r in rs:
                reasons[r] = reasons.get(r, 0) + 1
        return {
            "every": self.every,
            "windows": self.windows,
            "windows_read_raw": len(self.selected),
            "steps_total": self.steps_total,
            "steps_read_raw": self.raw_steps,
            "reasons": reasons,
            "read_raw": _ranges(sorted(self.selected)),
            # windows read in part: their first steps (the even sample), last (a spike's history) or
            # the steps around a spike's marks
            "windows_read_in_part": {
                mode: sum(p.mode == mode for p in self.parts.values()) for mode in ("head", "tail", "span")
            },
            "notes": list(self.notes),
        }


def _ranges(windows: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for w in windows:
        if out and out[-1][1] == w - 1:
            out[-1][1] = w
        else:
            out.append([w, w])
    return out


# --- phase 1: the index --------------------------------------------------------------------------

_STAT6 = pa.list_(pa.float64())
_INDEX_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string()),
        pa.field("schema", pa.string()),
        pa.field("rank", pa.int64()),
        pa.field("every", pa.int64()),
        pa.field("window", pa.int64()),
        pa.field("first", pa.int64()),
        pa.field("last", pa.int64()),
        pa.field("steps", pa.int64()),
        pa.field("at", pa.list_(pa.int64())),
        pa.field("others", pa.list_(pa.list_(pa.int64()))),
        pa.field(
            "screen",
            pa.struct(
                [
                    pa.field("flags", pa.int64()),
                    pa.field("digest", pa.string()),
                    pa.field("shape", pa.string()),
                    pa.field("loss", _STAT6),
                    pa.field("gsq", _STAT6),
                    pa.field("gsql", _STAT6),
                    pa.field("samples", _STAT6),
                    pa.field("tokens", _STAT6),
                    pa.field("lr", _STAT6),
                ]
            ),
        ),
    ]
)


class IndexError_(ValueError):
    """The index cannot be used (the message says why)."""


def _read_bytes(path: Path, limit: int) -> tuple[bytes, os.stat_result]:
    fd, st = open_regular(path)
    try:
        if st.st_size > limit:
            raise IndexError_(f"larger than {limit} bytes")
        return read_fd(fd, st.st_size), st
    finally:
        os.close(fd)


def _fixed(col: pa.ChunkedArray, width: int) -> np.ndarray:
    """A list<double> column of ``width``-long lists as float64 [n, width]; a null or short list: nan."""
    arr = col.combine_chunks()
    n = len(arr)
    out = np.full((n, width), np.nan)
    if n == 0:
        return out
    lengths = np.asarray(pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False))
    flat = _floats(arr.flatten())
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    for j in range(width):
        ok = lengths > j
        out[ok, j] = flat[starts[ok] + j]
    return out


def _hex64(col: pa.ChunkedArray) -> np.ndarray:
    out = np.zeros(len(col), dtype=np.uint64)
    for i, v in enumerate(col.to_pylist()):
        if isinstance(v, str) and 0 < len(v) <= 16:
            try:
                out[i] = int(v, 16) or 1
            except ValueError:
                out[i] = 1
    return out


_SPIKES = b'"spikes":'
_SPIKES_AFTER_CUT = 512  # `spikes` follows the cut after `inputs` and `shape` (~70 bytes)
_SPIKES_BYTES = 4096  # a few [count, first, last] lists
_NO_MARK = [-1, -1]
_BAD_MARK = [-2, -2]


def _marks_of(line: bytes, cut: int) -> list[int] | None:
    """The spike marks of one index line (after its cut): [loss first, last, ‖g‖² first, last],
    -1 where that series has none, -2 where they cannot be read; None for no marks at all (the
    usual ``"spikes":{}``, looked at without parsing). Read only to narrow a flagged window:
    :func:`_checked` reads a flagged window whose marks are not valid whole."""
    import json

    j = line.find(_SPIKES, cut, cut + _SPIKES_AFTER_CUT)
    if j < 0:
        return _BAD_MARK + _BAD_MARK
    j += len(_SPIKES)
    if line.startswith(b"{}", j):
        return None
    try:
        got, _ = json.JSONDecoder().raw_decode(line[j : j + _SPIKES_BYTES].decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return _BAD_MARK + _BAD_MARK
    if not isinstance(got, dict):
        return _BAD_MARK + _BAD_MARK
    out: list[int] = []
    for name in ("loss", "gsq_global"):
        m = got.get(name)
        if m is None:
            out += _NO_MARK
        elif (
            isinstance(m, list)
            and len(m) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**62 for v in m)
        ):
            out += m[1:]
        else:
            out += _BAD_MARK
    return out


def _index_body(raw: bytes, rank: int, ino: int) -> tuple[int, list[bytes], dict[int, list[int]]]:
    """An index file's header checked: (its R, each line up to its statistics, the spike marks of
    the lines that have any by line: :func:`_marks_of`) (IndexError_ says what is wrong)."""
    import json

    lines = raw.split(b"\n")
    lines.pop()  # b"" after the last newline, or a truncated last line (killed while appending)
    if not lines:
        raise IndexError_("empty")
    try:
        head = json.loads(lines[0])
    except (ValueError, RecursionError):
        raise IndexError_("its header is not JSON") from None
    if not (
        isinstance(head, dict)
        and head.get("kind") == "rollup_index"
        and records.schema_problem(head.get("schema"), INDEX_SCHEMA) is None
        and head.get("rank") == rank
        and isinstance(head.get("every"), int)
        and not isinstance(head.get("every"), bool)
        and head["every"] > 0
    ):
        raise IndexError_("its header is of another rank or schema")
    if head.get("ino") != ino:
        raise IndexError_("stale (it indexes another rank file: the inode differs)")
    cut = []
    marks = {}
    for i, line in enumerate(lines[1:]):
        k = line.find(CUT)
        if k < 0:
            raise IndexError_("a line without the rollup's statistics")
        cut.append(line[:k])
        m = _marks_of(line, k)
        if m is not None:
            marks[i] = m
    return int(head["every"]), cut, marks


@dataclass
class _IndexColumns:
    """Parsed index lines as numpy, row by row (one row per line; rows of several ranks' indexes at
    once in :func:`_index_batch`): what :func:`_checked` checks and keeps of each rank's rows."""

    kind: np.ndarray  # 1: "rollup", 0: null, -1: another (pc.all's rule: nulls skipped, one needed)
    schema: np.ndarray  # the same for ROLLUP_SCHEMA
    ints: dict[str, np.ndarray]  # rank, every, window, first, last, steps: int64, null -1
    at: np.ndarray  # float64 [n, 2], nan where null or short
    n_others: np.ndarray  # int64 [n]: `others` entries of each row
    others_at: np.ndarray  # int64 [n + 1]: where each row's entries start in `others`
    others: np.ndarray  # float64 [sum n_others, 2]
    screen: np.ndarray  # bool [n]: the row has its screen
    flags: np.ndarray
    digest: np.ndarray
    stats: dict[str, np.ndarray]  # loss, gsq, gsql, samples, tokens [n, 6], lr [n, 2]

    def rows(self, a: int, b: int) -> _IndexColumns:
        """Rows [a, b) (views)."""
        o = self.others_at
        return _IndexColumns(
            kind=self.kind[a:b],
            schema=self.schema[a:b],
            ints={k: v[a:b] for k, v in self.ints.items()},
            at=self.at[a:b],
            n_others=self.n_others[a:b],
            others_at=o[a : b + 1] - o[a],
            others=self.others[o[a] : o[b]],
            screen=self.screen[a:b],
            flags=self.flags[a:b],
            digest=self.digest[a:b],
            stats={k: v[a:b] for k, v in self.stats.items()},
        )


def _match(col: pa.ChunkedArray, value: str) -> np.ndarray:
    eq = np.asarray(pc.fill_null(pc.equal(col, value), False).to_numpy(zero_copy_only=False), dtype=bool)
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return np.where(eq, 1, np.where(valid, -1, 0)).astype(np.int8)


def _index_columns(table: pa.Table) -> _IndexColumns:
    n = table.num_rows

    def ints(name: str) -> np.ndarray:
        return np.asarray(pc.fill_null(table[name], -1).to_numpy(zero_copy_only=False), dtype=np.int64)

    olist = table["others"].combine_chunks()
    n_others = np.asarray(
        pc.fill_null(pc.list_value_length(olist), 0).to_numpy(zero_copy_only=False), np.int64
    )
    others = _fixed(pa.chunked_array([olist.flatten()]), 2) if n_others.sum() else np.zeros((0, 2))
    others_at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_others, out=others_at[1:])
    screen = table["screen"].combine_chunks()
    widths = {"loss": 6, "gsq": 6, "gsql": 6, "samples": 6, "tokens": 6, "lr": 2}
    return _IndexColumns(
        kind=_match(table["kind"], "rollup"),
        schema=_match(table["schema"], ROLLUP_SCHEMA),
        ints={k: ints(k) for k in ("rank", "every", "window", "first", "last", "steps")},
        at=_fixed(table["at"], 2),
        n_others=n_others,
        others_at=others_at,
        others=others,
        screen=np.asarray(screen.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if n
        else np.zeros(0, dtype=bool),
        flags=np.asarray(pc.fill_null(screen.field("flags"), 0).to_numpy(zero_copy_only=False), np.int64),
        digest=_hex64(pa.chunked_array([screen.field("digest")])),
        stats={k: _fixed(pa.chunked_array([screen.field(k)]), w) for k, w in widths.items()},
    )


def _all_rule(match: np.ndarray) -> bool:
    """pc.all(pc.equal(column, value)) of a rank's rows: nulls skipped, at least one value needed."""
    return bool((match != -1).all() and (match == 1).any())


def _marks(
    flags: np.ndarray, first: np.ndarray, last: np.ndarray, by_line: dict[int, list[int]]
) -> np.ndarray:
    """int64 [n, 4] (RankWindows.marks): the marks of the flagged windows' series, each pair within
    its window's first and last step or else those (the window whole); -1 where not flagged."""
    n = len(flags)
    out = np.full((n, 4), -1, dtype=np.int64)
    if not n:
        return out
    for i, m in by_line.items():
        if 0 <= i < n:
            out[i] = m
    for j, bit in ((0, LOSS_SPIKE), (2, GRAD_SPIKE)):
        on = (flags & bit) != 0
        lo, hi = out[:, j], out[:, j + 1]
        bad = on & ~((first <= lo) & (lo <= hi) & (hi <= last))
        lo[bad], hi[bad] = first[bad], last[bad]
        lo[~on], hi[~on] = -1, -1
    return out


def _checked(
    cols: _IndexColumns, rank: int, every: int, size: int, ino: int, marks: dict[int, list[int]] | None = None
) -> RankWindows:
    """One rank's parsed index lines checked (IndexError_ says what is wrong) and kept as arrays
    (``marks``: the spike marks by line, :func:`_index_body`)."""
    n = len(cols.kind)
    ints = cols.ints
    window, first, last, steps = ints["window"], ints["first"], ints["last"], ints["steps"]
    kind_ok = _all_rule(cols.kind) if n else True
    schema_ok = _all_rule(cols.schema) if n else True
    if not (kind_ok and schema_ok) or (
        n and ((ints["rank"] != rank).any() or (ints["every"] != every).any())
    ):
        raise IndexError_("a line of another kind, rank, schema or window length")
    if n and (
        (window < 0).any()
        or (window >= MAX_WINDOW).any()
        or (np.diff(window) <= 0).any()
        or (first < window * every).any()
        or (last < first).any()
        or (last >= (window + 1) * every).any()
        or (steps < 1).any()
        or (steps > every).any()
        or (first > size).any()  # a step takes a line of the rank file: no number sizes an allocation
    ):
        raise IndexError_("windows out of order or with impossible steps")
    at = cols.at
    if n and (
        np.isnan(at).any()
        or at[0, 0] != 0
        or (at[1:, 0] != at[:-1, 1]).any()
        or (at[:, 1] <= at[:, 0]).any()
        or at[-1, 1] > size
    ):
        raise IndexError_(f"window bytes that do not follow on or lie beyond the rank file ({size} B)")
    at_i = at.astype(np.int64)
    owin = np.repeat(np.arange(n), cols.n_others)
    others = cols.others if len(owin) else np.zeros((0, 2))
    if len(owin) and (
        np.isnan(others).any()
        or (others[:, 0] < at_i[owin, 0]).any()
        or (others[:, 1] > at_i[owin, 1]).any()
        or (others[:, 1] <= others[:, 0]).any()
        or (others[1:, 0] < others[:-1, 1]).any()
    ):
        raise IndexError_("other lines outside their window's bytes")
    if n and not cols.screen.all():
        raise IndexError_("a line without its screen")
    out = RankWindows(
        rank=rank,
        every=every,
        window=window,
        first=first,
        last=last,
        steps=steps,
        at=at_i,
        others=others.astype(np.int64),
        flags=cols.flags,
        digest=cols.digest,
        loss=cols.stats["loss"],
        gsq=cols.stats["gsq"],
        gsql=cols.stats["gsql"],
        samples=cols.stats["samples"],
        tokens=cols.stats["tokens"],
        lr=cols.stats["lr"],
        marks=_marks(cols.flags, first, last, marks or {}),
        tail=int(at_i[-1, 1]) if n else 0,
        size=size,
        ino=ino,
    )
    return _trim_open_window(out)


def _parse_index(raw: bytes, rank: int, size: int, ino: int) -> RankWindows:
    """An index file's bytes as arrays, checked (IndexError_ says what is wrong)."""
    every, cut, marks = _index_body(raw, rank, ino)
    table = _arrow(b"}\n".join(cut) + b"}\n", _INDEX_SCHEMA) if cut else _INDEX_SCHEMA.empty_table()
    if table is None or table.num_rows != len(cut):
        raise IndexError_("a line that is not an index line")
    return _checked(_index_columns(table), rank, every, size, ino, marks)


def _trim_open_window(rw: RankWindows) -> RankWindows:
    """A last window that its last step did not close (the run's final, partial window, or a
    `summarize` of a run still writing) is read raw as part of the tail, whole."""
    n = len(rw.window)
    if n and rw.last[-1] != (rw.window[-1] + 1) * rw.every - 1:
        keep = np.arange(n - 1)
        rw.tail = int(rw.at[-1, 0])
        for name in (
            "window",
            "first",
            "last",
            "steps",
            "flags",
            "digest",
            "loss",
            "gsq",
            "gsql",
            "samples",
            "tokens",
            "lr",
            "marks",
        ):
            setattr(rw, name, getattr(rw, name)[keep])
        rw.others = rw.others[rw.others[:, 1] <= rw.tail]
        rw.at = rw.at[keep]
    return rw


def _from_entries(entries: list[dict[str, Any]], rank: int, every: int, size: int, ino: int) -> RankWindows:
    """Arrays of index entries computed in memory (summarize.rollups_of_file), checked like a file's."""
    head = {"kind": "rollup_index", "schema": INDEX_SCHEMA, "rank": rank, "every": every, "ino": ino}
    raw = records.encode(head) + b"".join(records.encode(e) for e in entries)
    return _parse_index(raw, rank, size, ino)


IndexItem = tuple[str, str, int, int | None]  # (run dir, rank file, rank, R to compute the rollups at)
# an index read and its header checked, its lines not parsed yet: (rank, bytes, R, lines cut, size, ino,
# spike marks by line)
_Pending = tuple[int, bytes, int, list[bytes], int, int, dict[int, list[int]]]


def _index_arrays(item: IndexItem) -> RankWindows | tuple[int, str]:
    """Phase 1 for one rank: its index as arrays; ``(rank, why)`` when it cannot be used. With
    ``every`` given, the index is computed from the rank file (the map of summarize) instead."""
    got = _index_start(item)
    if not isinstance(got, tuple) or isinstance(got[1], str):
        return got
    return _index_alone(got)


def _index_start(item: IndexItem) -> RankWindows | tuple[int, str] | _Pending:
    """Phase 1 for one rank up to the parse of its index lines (:data:`_Pending`), or its result."""
    run_dir, path_s, rank, every = item
    path = Path(path_s)
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        return rank, f"cannot stat its rank file ({exc.strerror})"
    if every is not None:
        res = rollups_of_file(path, rank, every)
        if res.ino is None or res.ino != st.st_ino:
            return rank, "its rank file changed while it was read"
        try:
            return _from_entries(res.rollups, rank, every, st.st_size, st.st_ino)
        except IndexError_ as exc:
            return rank, f"its rollups could not be computed ({exc})"
    path = index_path(run_dir, rank)
    if not os.path.lexists(path):
        return rank, "no rollup index"
    try:
        raw, _ = _read_bytes(path, MAX_INDEX_BYTES)
        r, cut, marks = _index_body(raw, rank, st.st_ino)
    except (OSError, IndexError_) as exc:
        return rank, f"rollup index unusable: {exc}"
    return rank, raw, r, cut, st.st_size, st.st_ino, marks


def _index_alone(p: _Pending) -> RankWindows | tuple[int, str]:
    rank, raw, _, _, size, ino, _ = p
    try:
        return _parse_index(raw, rank, size, ino)
    except IndexError_ as exc:
        return rank, f"rollup index unusable: {exc}"


def _index_batch(items: list[IndexItem]) -> list[RankWindows | tuple[int, str]]:
    """Phase 1 for several ranks (:func:`_index_arrays` of each, the same results): their index
    lines parsed by one Arrow call and turned into arrays at once, then checked rank by rank. An
    Arrow call and each conversion cost ~0.1 ms whatever the size, ~20 per rank on 20 lines alone;
    the cost of phase 1 was those calls. Lines Arrow refuses: the batch in halves, down to one rank
    (parsed alone: with the non-finite strings mapped, as :func:`_parse_index`)."""
    got = [_index_start(item) for item in items]
    pending = [(i, g) for i, g in enumerate(got) if isinstance(g, tuple) and not isinstance(g[1], str)]
    out: list[Any] = got
    for i, res in zip([i for i, _ in pending], _parse_pending([g for _, g in pending])):
        out[i] = res
    return out


def _parse_pending(batch: list[_Pending]) -> list[RankWindows | tuple[int, str]]:
    if not batch:
        return []
    if len(batch) == 1 or not all(p[3] for p in batch):
        return [_index_alone(p) for p in batch]
    blob = b"".join(b"}\n".join(p[3]) + b"}\n" for p in batch)
    table = _arrow(blob, _INDEX_SCHEMA, map_nonfinite=False)
    if table is None or table.num_rows != sum(len(p[3]) for p in batch):
        half = len(batch) // 2
        return _parse_pending(batch[:half]) + _parse_pending(batch[half:])
    cols = _index_columns(table)
    out: list[RankWindows | tuple[int, str]] = []
    a = 0
    for rank, _raw, every, cut, size, ino, marks in batch:
        b = a + len(cut)
        try:
            out.append(_checked(cols.rows(a, b), rank, every, size, ino, marks))
        except IndexError_ as exc:
            out.append((rank, f"rollup index unusable: {exc}"))
        a = b
    return out


def has_index(run_dir: Path, ranks: list[int]) -> bool:
    """Whether any of these ranks has a rollup index file (``--rollups auto`` needs one)."""
    return any(os.path.lexists(index_path(run_dir, r)) for r in ranks)


# --- phase 2: selection ---------------------------------------------------------------------------


@dataclass
class Reduced:
    """The windows of every rank reduced (index arrays merged over ranks, window by window)."""

    every: int
    windows: int
    flags: np.ndarray  # OR over ranks
    loss: np.ndarray  # [W, 6] merged STAT
    gsq: np.ndarray
    gsql: np.ndarray
    samples: np.ndarray
    lr_max: np.ndarray
    excess: np.ndarray  # Σ over ranks of (window max − window mean) of the local loss
    excess_n: np.ndarray
    within: np.ndarray  # Σ over ranks of Σ(x − window mean)² of the local loss (pooled variance)
    within_n: np.ndarray
    ranks: np.ndarray  # ranks with the window
    window_steps: np.ndarray  # steps of the window (the largest count of any rank)
    loss_marks: np.ndarray  # ranks whose spike screen marked a loss step in the window
    digest_ranks: np.ndarray  # ranks with an input digest
    digest_same: np.ndarray  # of them, ranks with the lowest such rank's digest
    last_window: dict[int, int]
    # int64 [W, 4]: over ranks, the first (min) and last (max) step of the local-loss and global-‖g‖²
    # spike marks (RankWindows.marks), -1 where no rank has one
    marks: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), dtype=np.int64))


def _merge_stat(into: np.ndarray, rows: np.ndarray, at: np.ndarray) -> None:
    for j in (0, 1, 2, 3):
        np.add.at(into[:, j], at, np.nan_to_num(rows[:, j]))
    np.fmin.at(into[:, 4], at, rows[:, 4])
    np.fmax.at(into[:, 5], at, rows[:, 5])


def reduce(ranks: list[RankWindows]) -> Reduced:
    every = ranks[0].every if ranks else 1
    W = max((int(r.window[-1]) + 1 for r in ranks if len(r.window)), default=0)
    for r in ranks:  # a rank's tail reaches past its last indexed window
        W = max(W, int(math.ceil((r.last[-1] + 1) / every)) if len(r.last) else 0)
    red = Reduced(
        every=every,
        windows=W,
        flags=np.zeros(W, dtype=np.int64),
        loss=np.zeros((W, 6)),
        gsq=np.zeros((W, 6)),
        gsql=np.zeros((W, 6)),
        samples=np.zeros((W, 6)),
        lr_max=np.full(W, np.nan),
        excess=np.zeros(W),
        excess_n=np.zeros(W),
        within=np.zeros(W),
        within_n=np.zeros(W),
        ranks=np.zeros(W, dtype=np.int64),
        window_steps=np.zeros(W, dtype=np.int64),
        loss_marks=np.zeros(W, dtype=np.int64),
        digest_ranks=np.zeros(W, dtype=np.int64),
        digest_same=np.zeros(W, dtype=np.int64),
        last_window={},
        marks=np.full((W, 4), -1, dtype=np.int64),
    )
    for m in (red.loss, red.gsq, red.gsql, red.samples):
        m[:, 4:] = np.nan
    # every rank's windows at once, in rank order: each ufunc.at applies its values in order, so
    # every window's sums take their terms in the order of a loop over the ranks (the same floats)
    rs = [r for r in sorted(ranks, key=lambda x: x.rank) if len(r.window)]
    if not rs:
        return red
    for r in rs:
        red.last_window[r.rank] = int(r.window[-1])
    w = np.concatenate([r.window for r in rs])
    flags = np.concatenate([r.flags for r in rs])
    loss = np.concatenate([r.loss for r in rs])
    np.bitwise_or.at(red.flags, w, flags & ~LOSS_SPIKE)  # a loss mark counts by quorum (select)
    np.add.at(red.ranks, w, 1)
    np.maximum.at(red.window_steps, w, np.concatenate([r.steps for r in rs]))
    np.add.at(red.loss_marks, w, ((flags & LOSS_SPIKE) != 0).astype(np.int64))
    _merge_stat(red.loss, loss, w)
    for name in ("gsq", "gsql", "samples"):
        _merge_stat(getattr(red, name), np.concatenate([getattr(r, name) for r in rs]), w)
    np.fmax.at(red.lr_max, w, np.concatenate([r.lr[:, 1] for r in rs]))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = loss[:, 2] / (loss[:, 0] - loss[:, 1])
        n_ok = loss[:, 0] - loss[:, 1]
        ss = loss[:, 3] - n_ok * mean * mean
    ex = loss[:, 5] - mean
    ok = np.isfinite(ex)
    np.add.at(red.excess, w[ok], ex[ok])
    np.add.at(red.excess_n, w[ok], 1)
    ok = np.isfinite(ss) & (n_ok > 1)
    np.add.at(red.within, w[ok], np.maximum(ss[ok], 0.0))
    np.add.at(red.within_n, w[ok], n_ok[ok] - 1)
    # input digests: of each window, the lowest rank's with one, and how many ranks have it
    digest = np.concatenate([r.digest for r in rs])
    has = digest != 0
    wh, dh = w[has], digest[has]
    lowest = np.zeros(W, dtype=np.uint64)
    first_w, first_at = np.unique(wh, return_index=True)
    lowest[first_w] = dh[first_at]
    np.add.at(red.digest_ranks, wh, 1)
    np.add.at(red.digest_same, wh, (dh == lowest[wh]).astype(np.int64))
    marks = np.concatenate([r.marks for r in rs])
    for j in (0, 2):  # first of the earliest, last of the latest, over the ranks with marks
        on = marks[:, j] >= 0
        lo = np.full(W, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(W, -1, dtype=np.int64)
        np.minimum.at(lo, w[on], marks[on, j])
        np.maximum.at(hi, w[on], marks[on, j + 1])
        red.marks[:, j] = np.where(hi >= 0, lo, -1)
        red.marks[:, j + 1] = hi
    return red


def _screen(x: np.ndarray) -> np.ndarray:
    """Windows whose value jumps up from the previous window's by more than SCREEN_Z robust standard
    deviations of the previous SCREEN_HISTORY windows' changes (MIN_SCREEN_HISTORY of them needed).
    On the changes, not the levels: a loss that falls fast in the first windows would widen a level
    baseline until a spike inside it no longer stands out (the 1,024 × 2,000 bench run: a +3 nat spike
    of every rank at window 10 was z = 3.4 on the levels, far above 5 on the changes)."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    out = np.zeros(n, dtype=bool)
    if n <= MIN_SCREEN_HISTORY + 1:
        return out
    d = np.full(n, np.nan)
    d[1:] = x[1:] - x[:-1]
    padded = np.concatenate((np.full(SCREEN_HISTORY, np.nan), d))
    hist = np.lib.stride_tricks.sliding_window_view(padded, SCREEN_HISTORY)[:n]  # the changes before each
    enough = np.isfinite(hist).sum(axis=1) >= MIN_SCREEN_HISTORY
    if not enough.any():
        return out
    med = np.full(n, np.nan)
    mad = np.full(n, np.nan)
    with np.errstate(invalid="ignore"):
        med[enough] = np.nanmedian(hist[enough], axis=1)
        mad[enough] = np.nanmedian(np.abs(hist[enough] - med[enough, None]), axis=1)
        rise = d - med
        flat = rise > 1e-12 * np.maximum(np.abs(x), 1.0)
        out = enough & np.isfinite(d) & (rise > 0) & np.where(mad > 0, rise > SCREEN_Z * 1.4826 * mad, flat)
    return np.asarray(out, dtype=bool)


def _spike_flags(red: Reduced) -> np.ndarray:
    """The reduced flags with LOSS_SPIKE where a window's loss marks count: a rank's own loss spike
    is a spike of the cross-rank loss only when it is shared — a window counts when half its ranks
    marked it, or a tenth of them from 10 ranks on (one noisy rank of 1,024 does not make every
    window matter; a spike of every rank within each one's noise marks a few hundred)."""
    quorum = np.where(red.ranks >= 10, np.ceil(red.ranks / 10), np.ceil(red.ranks / 2))
    marked = red.loss_marks >= np.maximum(quorum, 1)
    out: np.ndarray = np.where(marked & (red.loss_marks > 0), red.flags | LOSS_SPIKE, red.flags)
    return out


def mark_spans(red: Reduced) -> dict[int, tuple[int, int]]:
    """Of each window with a spike flag that counts (:func:`_spike_flags`), the first and last step
    of the marks that flag it, over every rank (the loss marks only where they count); the whole
    window where a mark is missing (RankWindows.marks)."""
    R = red.every
    flags = _spike_flags(red)
    out: dict[int, tuple[int, int]] = {}
    marks = red.marks if len(red.marks) == red.windows else np.full((red.windows, 4), -1, dtype=np.int64)
    for w in np.flatnonzero(flags & (LOSS_SPIKE | GRAD_SPIKE)).tolist():
        f = int(flags[w])
        pairs = [marks[w, j : j + 2].tolist() for j, bit in ((0, LOSS_SPIKE), (2, GRAD_SPIKE)) if f & bit]
        if all(lo >= 0 for lo, _ in pairs):
            out[w] = (min(lo for lo, _ in pairs), max(hi for _, hi in pairs))
        else:
            out[w] = (w * R, w * R + R - 1)
    return out


def _history(start: int, R: int) -> range:
    """The windows before the window of step ``start`` that hold the spike rule's SPIKE_WINDOW steps
    before it (at a window's first step: the ⌈SPIKE_WINDOW/R⌉ windows before it)."""
    return range(max(0, (start - SPIKE_WINDOW) // R), start // R)


def _history_start(w: int, why: list[str], R: int, spans: dict[int, tuple[int, int]]) -> int | None:
    """Where the spike rule's history must end for window ``w`` (None: no spike or screen there): its
    first step, or for a window read only for its spike marks the marks' first step."""
    if "screen" in why:
        return w * R
    if "spike" in why:
        return spans.get(w, (w * R, 0))[0]
    return None


def select(
    red: Reduced,
    requested: tuple[tuple[int, int], ...] = (),
    sample: int = SAMPLE_WINDOWS,
    by_marks: bool = True,
) -> dict[int, list[str]]:
    """The windows to read raw, each with its reasons (keys of REASONS); ``sample`` windows spread
    evenly over the rest. ``by_marks``: a spike window's history reaches back SPIKE_WINDOW steps
    from its marks' first step (:func:`mark_spans`), else from the window's first step (every
    selected window read whole: the read before windows in part)."""
    W, R = red.windows, red.every
    chosen: dict[int, list[str]] = {}
    spans = mark_spans(red) if by_marks else {}

    def pick(w: int, why: str) -> None:
        if 0 <= w < W and why not in chosen.setdefault(w, []):
            chosen[w].append(why)

    for w in range(min(W, max(2, math.ceil(EARLY_STEPS / R)))):
        pick(w, "first")
    rising = np.isfinite(red.lr_max[1:]) & (red.lr_max[1:] > red.lr_max[:-1])
    w = 1
    while w < W and rising[w - 1]:
        pick(w, "warmup")
        w += 1
    pick(w, "warmup")  # the first window after the lr stopped rising (a spike at the warmup's end)
    pick(W - 1, "last")
    for last in red.last_window.values():
        pick(last, "last")
    flags = _spike_flags(red)
    for w in np.flatnonzero(flags).tolist():
        f = int(flags[w])
        if f & NONFINITE:
            pick(w, "nonfinite")
        if f & SKIPPED:
            pick(w, "skipped")
        if f & SHAPE:
            pick(w, "shape")
            pick(w - 1, "shape")
        if f & (LOSS_SPIKE | GRAD_SPIKE):
            pick(w, "spike")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = red.loss[:, 2] / (red.loss[:, 0] - red.loss[:, 1])
        excess = red.excess / red.excess_n
        pooled = red.within / red.within_n
        gmax = red.gsq[:, 5]
    # (not the largest loss of any rank: one rank's outlier is no spike of the mean unless it also
    # moves the excess or the pooled variance, and at 1,024 ranks it fires on every other window)
    for series in (mean, excess, pooled, gmax):
        for w in np.flatnonzero(_screen(series)).tolist():
            pick(w, "screen")
    # the spike rule's history before each spike and screen window (a window read whole for a
    # screen: before its first step; one read for its spike marks: before their first step)
    for w, why in list(chosen.items()):
        start = _history_start(w, why, R, spans)
        if start is not None:
            for h in _history(start, R):
                pick(h, "before-spike")
    agree = (red.digest_ranks > 1) & (red.digest_same == red.digest_ranks)
    for w in np.flatnonzero(agree[1:] != agree[:-1]).tolist():
        pick(w + 1, "data")
    for a, b in requested:
        for w in range(max(0, a // R), min(W - 1, b // R) + 1):
            pick(w, "requested")
    # the even sample: blocks of SAMPLE_BLOCK_STEPS consecutive steps spread over the whole run,
    # whatever else was chosen (the statistical checks' unbiased sample: analysis/quantities/noise_band.py)
    for a, b in _sample_blocks(W, R, sample):
        for w in range(a, b):
            pick(w, "sample")
    return dict(sorted(chosen.items()))


def _sample_blocks(W: int, R: int, sample: int) -> list[tuple[int, int]]:
    """The even sample's blocks of windows [a, b): ``sample`` blocks of SAMPLE_BLOCK_STEPS steps."""
    block = max(1, math.ceil(SAMPLE_BLOCK_STEPS / R))
    if not W:
        return []
    starts = np.unique(np.linspace(0, max(W - block, 0), min(sample, W)).round().astype(int))
    return [(a, min(a + block, W)) for a in starts.tolist()]


def sample_heads(W: int, R: int, sample: int) -> dict[int, int]:
    """Of each sample block's last window, the first steps the block needs (only where fewer than R):
    the block holds SAMPLE_BLOCK_STEPS steps, not a whole number of windows. None where the blocks
    cover every window (a short run, or the wider read of diagnose_run): the sample is the whole run."""
    out: dict[int, int] = {}
    blocks = _sample_blocks(W, R, sample)
    if sum(b - a for a, b in blocks) >= W:
        return out
    for a, b in blocks:
        need = SAMPLE_BLOCK_STEPS - (b - 1 - a) * R
        if b - a == max(1, math.ceil(SAMPLE_BLOCK_STEPS / R)) and 0 < need < R:
            out[b - 1] = need
    return out


def parts(
    selected: dict[int, list[str]],
    R: int,
    heads: dict[int, int],
    whole: bool = False,
    spans: dict[int, tuple[int, int]] | None = None,
) -> dict[int, Part]:
    """The selected windows read in part: the steps each reason needs, covered by one range of the
    window's steps — a window read for the even sample only the first steps its block needs
    (``heads``); a spike's history the SPIKE_WINDOW + HISTORY_MARGIN steps before the first step of
    the `screen` window after it or of the `spike` marks (``spans``: :func:`mark_spans`); a window
    selected for its spike marks the steps from that history to AFTER_SPIKE after the marks' last;
    any other reason the whole window. A range that is the window's first steps is a ``head`` Part,
    its last a ``tail``, one inside a ``span``; every other window whole. ``whole``: none (the old
    read)."""
    if whole:
        return {}
    spans = spans or {}
    need: dict[int, tuple[int, int]] = {}  # window -> first, last offset of the steps it needs

    def add(w: int, a: int, b: int) -> None:
        a, b = max(a - w * R, 0), min(b - w * R, R - 1)
        if w in selected and a <= b:
            old = need.get(w, (a, b))
            need[w] = (min(old[0], a), max(old[1], b))

    reach = SPIKE_WINDOW + HISTORY_MARGIN
    for w, why in selected.items():
        for r in why:
            if r == "spike" and "screen" not in why:
                lo, hi = spans.get(w, (w * R, w * R + R - 1))
                add(w, lo - reach, hi + AFTER_SPIKE)
            elif r == "sample" and w in heads:
                add(w, w * R, w * R + heads[w] - 1)
            elif r != "before-spike":  # a history: from the window it is the history of, below
                add(w, w * R, w * R + R - 1)
        start = _history_start(w, why, R, spans)
        if start is not None:
            for h in _history(start, R):
                add(h, start - reach, start - 1)
    out: dict[int, Part] = {}
    for w, (a, b) in need.items():
        if a == 0 and b == R - 1:
            continue
        out[w] = (
            Part("head", b + 1)
            if a == 0
            else Part("tail", R - a)
            if b == R - 1
            else Part("span", b - a + 1, a)
        )
    return out


def _applies(p: Part, n: int, R: int) -> bool:
    """Whether a window of ``n`` step records is read in part (else whole): a head or tail of fewer
    than n records; a span only of a full window (n = R: record i is step wR + i)."""
    return p.k < n and (p.mode != "span" or n == R)


# --- phase 3: raw windows -------------------------------------------------------------------------


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _spans(
    rw: RankWindows, selected: list[int], cuts: dict[int, tuple[int, int]] | None = None
) -> list[tuple[int, int]]:
    """The bytes phase 3 reads of one rank file: the selected windows (a window read in part: its
    bytes in ``cuts``), every other line, the tail."""
    sel = np.isin(rw.window, np.asarray(selected, dtype=np.int64))
    cuts = cuts or {}
    spans = [(int(a), int(b)) for a, b in rw.others]
    spans += [cuts.get(int(w), (int(a), int(b))) for w, (a, b) in zip(rw.window[sel], rw.at[sel])]
    spans.append((rw.tail, rw.size))
    return _merged([s for s in spans if s[1] > s[0]])


_STEP_LINE = records.line_prefix("step")


def _nth_step_start(chunk: bytes, at_line_start: bool, k: int, from_end: bool) -> int | None:
    """Where the k-th step line of ``chunk`` begins (from the start: k = 0 is the first; from the end:
    k = 1 is the last), counting only lines after a newline, or at 0 when the chunk begins a line;
    None when the chunk holds fewer. (bytes.split with a bound: the search runs in C.)"""
    needle = b"\n" + _STEP_LINE
    first = at_line_start and chunk.startswith(_STEP_LINE)
    if not from_end:
        m = k if first else k + 1  # newline-preceded starts needed
        if m == 0:
            return 0
        pieces = chunk.split(needle, m)
        if len(pieces) <= m:
            return None
        return sum(map(len, pieces[:m])) + (m - 1) * len(needle) + 1
    pieces = chunk.rsplit(needle, k)
    if len(pieces) == k + 1:
        return len(pieces[0]) + 1
    return 0 if first and len(pieces) == k else None


def _cut(fd: int, a: int, b: int, n: int, mode: str, k: int) -> tuple[int, int] | None:
    """The bytes of a window [a, b) of ``n`` step records that hold its first (``head``) or last
    (``tail``) ``k`` step records, cut at line starts; None when the bytes hold fewer step lines
    than that (the index does not match: the caller reads the window whole and checks it)."""
    size = b - a
    want = min(size, int(size * (k + 1) / max(n, 1) * 1.25) + 16384)  # a guess, widened when short
    while True:
        if mode == "head":
            chunk = os.pread(fd, want, a)
            at = _nth_step_start(chunk, True, k, from_end=False)
            if at is not None:
                return a, a + at
            if want >= size or len(chunk) < want:
                return None
        else:
            lo = b - want
            chunk = os.pread(fd, want, lo)
            if len(chunk) < want:
                return None
            at = _nth_step_start(chunk, lo == a, k, from_end=True)
            if at is not None:
                return lo + at, b
            if lo == a:
                return None
        want = min(size, want * 2)


def _step_start(fd: int, a: int, b: int, n: int, i: int) -> int | None:
    """Where step record ``i`` (0 < i < n) of a window [a, b) of ``n`` step records begins, looked
    for from the nearer end (:func:`_cut`); None when the bytes hold fewer step lines."""
    got = _cut(fd, a, b, n, "head", i) if i <= n - i else _cut(fd, a, b, n, "tail", n - i)
    if got is None:
        return None
    return got[1] if i <= n - i else got[0]


def _span_cut(fd: int, a: int, b: int, n: int, skip: int, k: int) -> tuple[int, int] | None:
    """The bytes of a window [a, b) of ``n`` step records that hold records skip … skip + k − 1, cut
    at line starts (a head cut and a tail cut combined); None when the bytes hold fewer step lines."""
    start = a if skip == 0 else _step_start(fd, a, b, n, skip)
    end = b if skip + k >= n else _step_start(fd, a, b, n, skip + k)
    if start is None or end is None or end <= start:
        return None
    return start, end


# (rank file, rank, its index arrays, the selected windows, those read in part (:func:`parts`),
# where to cache the columns and their key)
WindowsItem = tuple[str, int, RankWindows, list[int], dict[int, Part], str | None, dict[str, int] | None]


WindowsResult = tuple[int, RankData | None, Problems, str | None]  # (rank, data, problems, note)


def _read_windows(item: WindowsItem) -> WindowsResult:
    """Phase 3 for one rank: its selected windows (of those read in part, the bytes of their first
    or last step records), every other line and the tail, read with pread and checked against the
    index; on a mismatch the rank file read whole and cut to the same windows (the note says why).
    With a cache path and key, the columns read are cached there (rundir/rollup_cache.py) and no
    data is returned: the parent reads the cache (cheaper than unpickling them from a worker)."""
    return _read_windows_batch([item])[0]


def _read_windows_batch(items: list[WindowsItem]) -> list[WindowsResult]:
    """:func:`_read_windows` of several ranks (the same results): their bytes read and parsed rank
    by rank, turned into columns together (rankfile.to_columns_many: one conversion for the batch;
    one per rank cost ~1.4 ms more per rank on ~750 steps), then checked, cut and cached rank by rank."""
    started = [_windows_start(item) for item in items]
    reads = [(i, got.raw) for i, got in enumerate(started) if isinstance(got, _Bytes) and got.raw is not None]
    probs = {i: Problems() for i, _ in reads}
    # parsed rank by rank: one Arrow parse of the batch's bytes took the same CPU and ~1.6x the
    # wall time on the loaded 2-core box (its thread pool); the conversion is what batches well
    parsed = [parse_rank_bytes(raw, items[i][1], probs[i], step_bound=items[i][2].size) for i, raw in reads]
    steps = to_columns_many([(table, items[i][1], probs[i]) for (i, _), (_, table) in zip(reads, parsed)])
    data: dict[int, RankData] = {}
    for (i, _), (d, _), c in zip(reads, parsed, steps):
        d.steps = c
        data[i] = d
    return [
        _windows_finish(item, data.get(i), probs.get(i), got.why) if isinstance(got, _Bytes) else got
        for i, (item, got) in enumerate(zip(items, started))
    ]


@dataclass
class _Bytes:
    """A rank's bytes to parse (phase 3), or why they cannot be used (its rank file is read whole)."""

    raw: bytes | None
    why: str | None = None


def _windows_start(item: WindowsItem) -> _Bytes | WindowsResult:
    """The bytes :func:`_read_windows` parses for one rank, checked as whole lines where the index
    says; a result when the rank file cannot be opened."""
    path_s, rank, rw, selected, part, _, _ = item
    try:
        fd, st = open_regular(Path(path_s))
    except OSError as exc:
        probs = Problems()
        probs.add(f"rank {rank}: cannot read {exc}; ignored")
        return rank, RankData(rank=rank), probs, None
    try:
        if st.st_ino != rw.ino or st.st_size < rw.size:
            return _Bytes(None, "its rank file changed after its index was read")
        cuts = {}
        for i in np.flatnonzero(np.isin(rw.window, np.asarray(list(part), dtype=np.int64))).tolist():
            p = part[int(rw.window[i])]
            a, b, n = int(rw.at[i, 0]), int(rw.at[i, 1]), int(rw.steps[i])
            if _applies(p, n, rw.every):
                got = (
                    _span_cut(fd, a, b, n, p.skip, p.k)
                    if p.mode == "span"
                    else _cut(fd, a, b, n, p.mode, p.k)
                )
                if got is None:
                    return _Bytes(
                        None, f"window {int(rw.window[i])} holds fewer step lines than its index says"
                    )
                cuts[int(rw.window[i])] = got
        chunks = []
        for a, b in _spans(rw, selected, cuts):
            chunk = os.pread(fd, b - a, a)
            # whole lines: each begins as the writer begins every record and ends with a newline
            cut = len(chunk) != b - a or (b < rw.size and not chunk.endswith(b"\n"))
            if cut or not chunk.startswith(_LINE_START):
                return _Bytes(None, "its index points at bytes that are not whole lines")
            chunks.append(chunk)
    finally:
        os.close(fd)
    return _Bytes(b"".join(chunks))


def _windows_finish(
    item: WindowsItem, data: RankData | None, probs: Problems | None, why: str | None
) -> WindowsResult:
    """One rank's parsed windows checked against its index (else its rank file read whole and cut
    to the same windows, with a note), and cached."""
    path_s, rank, rw, selected, part, out, key = item
    path = Path(path_s)
    if why is None and data is not None:
        why = _mismatch(data, rw, selected, part)
    if why is not None or data is None or probs is None:
        data, probs = parse_rank(path, rank)
        if data.steps is not None and len(data.steps):
            keep = _kept(data.steps.step, rw, selected, part)
            data.steps = take_steps(data.steps, keep)
        return (
            rank,
            data,
            probs,
            f"rank {rank}: {why}; its rank file was read whole and cut to the same windows",
        )
    file_problems(data, probs)
    # unchanged while it was read: cache it (a read-only run directory: no cache, no problem)
    unchanged = out is not None and key is not None and key_of(path) == {k: key[k] for k in _FILE_KEY}
    if unchanged and save_cache(path, data, probs, key, out=Path(out)):  # type: ignore[arg-type]
        return rank, None, probs, None
    return rank, data, probs, None


_FILE_KEY = ("size", "mtime_ns", "ino", "version", "schema")  # rankfile.cache.file_key's


def _bytes_to_read(rw: RankWindows, selected: list[int]) -> int:
    sel = np.isin(rw.window, np.asarray(selected, dtype=np.int64))
    spans = rw.at[sel]
    return int(
        (spans[:, 1] - spans[:, 0]).sum() + (rw.others[:, 1] - rw.others[:, 0]).sum() + rw.size - rw.tail
    )


def _kept(
    step: np.ndarray, rw: RankWindows, selected: list[int], part: dict[int, Part] | None = None
) -> np.ndarray:
    """Steps of the selected windows (of a window read in part, its Part's step records, in the
    order of the file), and every step after the last indexed window (the tail)."""
    w = step // rw.every
    last_indexed = int(rw.window[-1]) if len(rw.window) else -1
    keep = bool_or(np.isin(w, np.asarray(selected, dtype=np.int64)), w > last_indexed)
    _keep_parts(keep, w, part or {}, rw.every)
    return keep


def _keep_parts(keep: np.ndarray, w: np.ndarray, part: dict[int, Part], R: int) -> None:
    """Of each window read in part (:func:`_applies` to the records it holds), unmark in ``keep``
    (in place) every step but its Part's records — its first (head) or last (tail) k, or k from
    record skip (span) — in the order of the file; ``w`` is each step's window."""
    for win, p in part.items():
        at = np.flatnonzero(w == win)
        if not _applies(p, len(at), R):
            continue
        if p.mode == "head":
            keep[at[p.k :]] = False
        elif p.mode == "tail":
            keep[at[: len(at) - p.k]] = False
        else:
            keep[at[: p.skip]] = False
            keep[at[p.skip + p.k :]] = False


def bool_or(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out: np.ndarray = a | b
    return out


def _mismatch(
    data: RankData, rw: RankWindows, selected: list[int], part: dict[int, Part] | None = None
) -> str | None:
    """Why the steps read do not match the index (None when they do). A window read in part holds
    its first (head) or last (tail) k step records: k of them, from the index's first step or to
    its last; a span, records skip … skip + k − 1 of a full window: steps first + skip … first +
    skip + k − 1."""
    c = data.steps
    step = c.step if c is not None else np.zeros(0, dtype=np.int64)
    part = part or {}
    w = step // rw.every
    last_indexed = int(rw.window[-1]) if len(rw.window) else -1
    indexed = w <= last_indexed
    sel = np.isin(rw.window, np.asarray(selected, dtype=np.int64))
    want = dict(
        zip(
            rw.window[sel].tolist(),
            zip(rw.steps[sel].tolist(), rw.first[sel].tolist(), rw.last[sel].tolist()),
        )
    )
    got_w, counts = np.unique(w[indexed], return_counts=True)
    got = dict(zip(got_w.tolist(), counts.tolist()))
    for win, (n, first, last) in want.items():
        in_w = step[w == win]
        p = part.get(win)
        mode, k, skip = (
            (p.mode, p.k, p.skip) if p is not None and _applies(p, n, rw.every) else ("whole", n, 0)
        )
        lo, hi = first + skip, first + skip + k - 1  # a span's steps (a full window: one step per record)
        if got.get(win, 0) != k:
            return f"window {win} holds {got.get(win, 0)} step record(s), its index says {k}"
        if k and (
            (mode in ("whole", "head") and int(in_w.min()) != first)
            or (mode in ("whole", "tail") and int(in_w.max()) != last)
            or (mode == "span" and (int(in_w.min()) != lo or int(in_w.max()) != hi))
            or int(in_w.min()) < first
            or int(in_w.max()) > last
        ):
            return (
                f"window {win} holds steps {int(in_w.min())}-{int(in_w.max())}, its index says {first}-{last}"
            )
    stray = set(got) - set(want)
    if stray:
        return f"step records of window(s) not read ({sorted(stray)[:3]}) in the bytes of others"
    return None


# --- the run --------------------------------------------------------------------------------------


def _pool_map(fn: Any, items: list[Any], workers: int) -> list[Any]:
    return list(_pool_imap(fn, items, workers))


def _pool_imap(fn: Any, items: list[Any], workers: int) -> Iterator[Any]:
    """``fn`` over ``items`` in order, in worker processes where there are several: each result as
    soon as it is done, so the caller's own work on it overlaps the workers' on the next. The items
    are batches already (several ranks each), so each is handed out alone: a chunk of several
    batches left one worker alone with its last chunk for seconds while the other core idled (the
    1,024 × 100,000 cold report: chunks of 32 batches, one worker done 7.5 s before the other;
    docs/report.md, table N)."""
    if workers > 1 and len(items) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield from pool.map(fn, items)
        return
    for i in items:
        yield fn(i)


INDEX_BATCH = 256  # ranks per call of _index_batch
# ranks per call of _read_windows_batch: up to this many, and bytes to parse (the batch's bytes and
# Arrow table are held at once in each worker)
WINDOWS_BATCH = 64
WINDOWS_BATCH_BYTES = 16 * 2**20


def _index_map(items: list[IndexItem], workers: int) -> list[RankWindows | tuple[int, str]]:
    """:func:`_index_batch` over ``items`` in batches (many per worker, so that the last ones end
    together: 4 per worker left one core idle ~1.5 s at 1,024 ranks)."""
    size = max(1, min(INDEX_BATCH, -(-len(items) // (workers * 16)) if workers > 1 else INDEX_BATCH))
    batches = [items[i : i + size] for i in range(0, len(items), size)]
    return [x for got in _pool_map(_index_batch, batches, workers) for x in got]


_ARRAYS = ("window", "first", "last", "steps", "at", "others", "flags", "digest", "marks")
_STATS = ("loss", "gsq", "gsql", "samples", "tokens", "lr")


def _to_cache(x: RankWindows) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    scalars = {"rank": x.rank, "every": x.every, "tail": x.tail, "size": x.size, "ino": x.ino, "note": x.note}
    return scalars, {n: getattr(x, n) for n in (*_ARRAYS, *_STATS)}


def _from_cache(scalars: dict[str, Any], arrays: dict[str, np.ndarray]) -> RankWindows | None:
    """A cached rank's index arrays; None when the entry does not hold what RankWindows needs."""
    try:
        x = RankWindows(
            rank=int(scalars["rank"]),
            every=int(scalars["every"]),
            tail=int(scalars["tail"]),
            size=int(scalars["size"]),
            ino=int(scalars["ino"]),
            note=None if scalars["note"] is None else str(scalars["note"]),
            **{n: arrays[n] for n in (*_ARRAYS, *_STATS)},
        )
    except (KeyError, TypeError, ValueError):
        return None
    n = len(x.window)
    shapes_ok = all(getattr(x, a).shape == (n,) for a in ("first", "last", "steps", "flags", "digest"))
    widths = {
        "at": 2,
        "others": 2,
        "loss": 6,
        "gsq": 6,
        "gsql": 6,
        "samples": 6,
        "tokens": 6,
        "lr": 2,
        "marks": 4,
    }
    if not shapes_ok or any(
        getattr(x, a).ndim != 2 or getattr(x, a).shape[1] != w or (a != "others" and len(getattr(x, a)) != n)
        for a, w in widths.items()
    ):
        return None
    return x


def _index_all(
    run_dir: Path, named: list[tuple[Path, int]], workers: int, use_cache: bool = False
) -> tuple[list[RankWindows], int, list[str]]:
    """Phase 1 for every rank: the indexes, and the rollups computed from the rank files of the ranks
    whose index cannot be used; (arrays per rank, R, notes). With ``use_cache``, a rank whose rank
    file and index file are unchanged since the last report comes from the index cache
    (rundir/rollup_cache.py), and the cache is rewritten when any rank was read again."""
    paths = {rank: str(p) for p, rank in named}
    cached, unusable = rollup_cache.load_index(run_dir) if use_cache else ({}, None)
    keys: dict[tuple[int, int | None], list[Any] | None] = {}

    def hit(rank: int, every: int | None) -> RankWindows | None:
        key = keys[(rank, every)] = rollup_cache.index_key(run_dir, Path(paths[rank]), rank, every)
        got = cached.get(rank)
        if key is None or got is None or got[0] != key:
            return None
        return _from_cache(got[1], got[2])

    first: list[RankWindows | tuple[int, str]] = []
    todo: list[tuple[str, str, int, int | None]] = []
    for p, r in named:
        z = hit(r, None)
        if z is not None and z.note is None:
            first.append(z)
        else:
            todo.append((str(run_dir), str(p), r, None))
    missed = len(todo)
    first += _index_map(todo, workers)
    ok = [x for x in first if isinstance(x, RankWindows)]
    failed = [x for x in first if not isinstance(x, RankWindows)]
    counts: dict[int, int] = {}
    for x in ok:
        counts[x.every] = counts.get(x.every, 0) + 1
    every = max(counts, key=lambda k: (counts[k], -k)) if counts else DEFAULT_EVERY
    failed += [(x.rank, f"its index has R = {x.every}, the run's is {every}") for x in ok if x.every != every]
    ok = [x for x in ok if x.every == every]
    notes: list[str] = []
    if unusable:
        notes.append(
            f"the rollup index cache ({records.CACHE_DIR}/{rollup_cache.INDEX_CACHE}) could not be used "
            f"({unusable}): every index was read again and the cache rewritten"
        )
    if failed:
        why = dict(failed)
        redo: list[RankWindows | tuple[int, str]] = []
        todo = []
        for r, _ in failed:
            y = hit(r, every)
            if y is not None and y.note is not None:
                redo.append(y)
            else:
                todo.append((str(run_dir), paths[r], r, every))
        missed += len(todo)
        redo += _index_map(todo, min(workers, max(len(todo), 1)))
        for got in redo:
            if isinstance(got, RankWindows):
                got.note = why[got.rank]
                ok.append(got)
            else:
                notes.append(f"rank {got[0]}: {why[got[0]]}; {got[1]}: it is read raw whole")
        computed = sorted(x.rank for x in ok if x.note)
        if computed:
            reasons = sorted({why[r] for r in computed})
            notes.append(
                f"{len(computed)} rank(s) ({_short(computed)}) without a usable rollup index "
                f"({'; '.join(r[:120] for r in reasons[:3])}): their rollups were computed from the rank files"
            )
    ok.sort(key=lambda x: x.rank)
    if use_cache and (missed or unusable or len(cached) != len(ok)):
        entries = []
        for x in ok:
            key = keys.get((x.rank, every if x.note else None))
            if key is not None:
                entries.append((key, *_to_cache(x)))
        rollup_cache.save_index(run_dir, entries)
    return ok, every, notes


def read_ranks(
    run_dir: Path,
    named: list[tuple[Path, int]],
    requested: tuple[tuple[int, int], ...] = (),
    sample: int = SAMPLE_WINDOWS,
) -> tuple[list[tuple[int, RankData, Problems]], RollupView]:
    """Every rank of a run by the rollup path (module doc): the raw data of the selected windows,
    and the view of the whole run from the rollups."""
    t0 = time.perf_counter()
    # worker processes only for enough bytes to read: the indexes here, the selected windows below
    # (a process pool costs ~0.1 s to start; the 8-rank warm report reads ~40 MB in all)
    cores = os.cpu_count() or 1
    index_bytes = 0
    for _, r in named:
        with contextlib.suppress(OSError):
            index_bytes += os.stat(index_path(run_dir, r), follow_symlinks=False).st_size
    workers = min(len(named), cores) if index_bytes >= PARALLEL_MIN_BYTES else 1
    use_cache = _run_bytes(named) >= rollup_cache.CACHE_MIN_BYTES
    ok, every, notes = _index_all(run_dir, named, workers, use_cache)
    t1 = time.perf_counter()
    red = reduce(ok)
    selected = select(red, requested, sample, by_marks=READ_IN_PART)
    heads = sample_heads(red.windows, every, sample) if READ_IN_PART else {}
    part = parts(selected, every, heads, whole=not READ_IN_PART, spans=mark_spans(red))
    t2 = time.perf_counter()
    chosen = sorted(selected)
    got = _windows_all(named, ok, every, chosen, part, sample, use_cache, cores)
    parsed = [(rank, data, probs) for rank, data, probs, _ in got if data is not None]
    fell_back = [note for *_, note in got if note]
    notes.extend(fell_back[:8])
    if len(fell_back) > 8:
        notes.append(f"… and {len(fell_back) - 8} more rank(s) read whole")
    done = {r for r, _, _ in parsed}
    for p, r in named:  # no usable index and no computable rollups: read raw whole, cut to the windows
        if r not in done:
            data, probs = parse_rank(p, r)
            if data.steps is not None and len(data.steps):
                w = data.steps.step // every
                keep = np.isin(w, np.asarray(chosen, dtype=np.int64)) | (w >= red.windows)
                _keep_parts(keep, w, part, every)  # the same steps as the other ranks'
                data.steps = take_steps(data.steps, keep)
            parsed.append((r, data, probs))
    t3 = time.perf_counter()
    by_rank = {x.rank: x for x in ok}
    rank_steps = {}
    for r, data, _ in parsed:
        c = data.steps
        n_raw = len(c) if c is not None else 0
        x = by_rank.get(r)
        if x is None:
            rank_steps[r] = n_raw
            continue
        last = int(x.window[-1]) if len(x.window) else -1
        tail = int((c.step // every > last).sum()) if c is not None and n_raw else 0
        rank_steps[r] = int(x.steps.sum()) + tail
    view = RollupView(
        every=every,
        windows=red.windows,
        selected=selected,
        steps_total=max(rank_steps.values(), default=0),
        rank_steps=rank_steps,
        raw_steps=max((len(d.steps) for _, d, _ in parsed if d.steps is not None), default=0),
        notes=notes,
        loss=red.loss,
        gsq=red.gsq,
        gsql=red.gsql,
        samples=red.samples,
        ranks=red.ranks,
        window_steps=red.window_steps,
        flags=red.flags,
        indexed_steps=max((int(x.steps.sum()) for x in ok), default=0),
        sample=sample,
        requested=requested,
        seconds={"index": t1 - t0, "select": t2 - t1, "raw": t3 - t2},
        parts=part,
        sample_heads=heads,
    )
    return sorted(parsed, key=lambda x: x[0]), view


def _windows_all(
    named: list[tuple[Path, int]],
    ok: list[RankWindows],
    every: int,
    chosen: list[int],
    part: dict[int, Part],
    sample: int,
    use_cache: bool,
    cores: int,
) -> list[tuple[int, RankData | None, Problems, str | None]]:
    """Phase 3 for every rank: from the windows cache where the rank file and the selection are
    unchanged (rundir/rollup_cache.py), else read (and cached by the worker)."""
    paths = {rank: str(p) for p, rank in named}
    items: list[WindowsItem] = []
    got: list[tuple[int, RankData | None, Problems, str | None]] = []
    for x in ok:
        out = key = None
        if use_cache:
            path = Path(paths[x.rank])
            fkey = key_of(path)
            if fkey is not None:
                out = str(rollup_cache.windows_cache_path(path, sample))
                key = rollup_cache.windows_key(fkey, every, np.asarray(_spans(x, chosen)), chosen, part)
                hit = load_cache(path, x.rank, key, where=Path(out))
                if hit is not None:
                    got.append((x.rank, hit[0], hit[1], None))
                    continue
        items.append((paths[x.rank], x.rank, x, chosen, part, out, key))
    sizes = [_bytes_to_read(x, chosen) for _, _, x, *_ in items]
    workers = min(len(items), cores) if sum(sizes) >= PARALLEL_MIN_BYTES else 1
    batches: list[list[WindowsItem]] = []
    held = 0
    for item, size in zip(items, sizes):  # ranks together up to WINDOWS_BATCH_BYTES (one at least)
        if not batches or held + size > WINDOWS_BATCH_BYTES or len(batches[-1]) >= WINDOWS_BATCH:
            batches.append([])
            held = 0
        batches[-1].append(item)
        held += size
    results = (r for got in _pool_imap(_read_windows_batch, batches, workers) for r in got)
    # the caches written by the workers are read while the workers go on with the next ranks
    for item, (rank, data, probs, note) in zip(items, results):
        if data is None:  # cached by the worker: read back here
            hit = load_cache(Path(item[0]), rank, item[6], where=Path(item[5]))  # type: ignore[arg-type]
            if hit is None:  # replaced since: read again here, uncached
                rank, data, probs, note = _read_windows((*item[:5], None, None))
            else:
                data, probs = hit
        got.append((rank, data, probs, note))
    return got


def _run_bytes(named: list[tuple[Path, int]]) -> int:
    total = 0
    for p, _ in named:
        with contextlib.suppress(OSError):
            total += os.stat(p, follow_symlinks=False).st_size
    return total


def _short(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks[:8]) + (" …" if len(ranks) > 8 else "")
