"""Read one rank file (RUN/ranks/rank-NNNNN.jsonl) into columns: fast where it can, tolerant always.

How (docs/report.md, "Reading rank files", has the measurements behind the choice):

1. The file is opened without following symlinks and only if it is a regular file (a FIFO would
   block, a device never end), and read up to its size at open time (a live run keeps growing).
2. Lines that begin the way the writer begins a `step` record (:func:`records.line_prefix`) are
   found by numpy over the bytes (:func:`_scan_lines`: no Python object per line) and parsed by
   pyarrow's JSON reader into an Arrow table with the schema of :data:`records.KINDS`["step"] —
   the whole file from its own buffer when nothing is damaged, else in chunks of
   :data:`CHUNK_LINES` lines. The writer's non-finite strings are mapped to
   values Arrow reads (±DBL_MAX for "±inf", the double below DBL_MAX for "nan"; mapped back after),
   so a recorded non-finite value stays distinct from a value not recorded (null).
3. A chunk that Arrow refuses (a damaged line, a wrong type, a line from another writer) is parsed
   line by line with ``json.loads`` and type-checked field by field (:func:`records.sanitize`): a
   damaged line costs that line, a wrong field that field, never the file. Every other line (the
   few non-step records) takes this path too.
4. Steps are validated (numbers within what the bytes can hold, duplicates dropped, micro-step
   counts bounded by the lists present) so no number in the data sizes an allocation by itself.

The resulting numpy columns (:class:`StepColumns`, as the analysis expects) are cached as an Arrow
IPC file in RUN/.ddp-doctor-cache/ (keyed by size, mtime, inode and the step schema; written to a
temp file and renamed, never through a symlink), so a finished run is parsed once and a warm read
is one read of the file: no parse, no conversion.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import json
import math
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc  # noqa: F401 - pa.ipc
import pyarrow.json as pj

from ddp_doctor.core.safe_io import PRIVATE_FILE, write_with
from ddp_doctor.rundir import records
from ddp_doctor.rundir.records import Field

# of a step record's `clip` entries; total_norm_shard and norm_type only under FSDP2
# (analysis/quantities/shards.py), the last three only for clip_grad_value_ (records._CLIP)
CLIP_COLUMNS = (
    "max_norm",
    "total_norm",
    "after_unscale",
    "scaler",
    "total_norm_shard",
    "norm_type",
    "clip_value",
    "max_abs",
    "clipped_norm",
)
CHUNK_LINES = 32768
MAX_LISTED_BAD_LINES = 5
# Arrow parses blocks of this size in parallel threads; a longer line fails its chunk over to the
# per-line path (slower, same result).
BLOCK_BYTES = 1 << 20
CACHE_VERSION = 6
CACHE_MIN_BYTES = 4 * 2**20  # runs (all rank files together) smaller than this are not cached
_DBL_MAX = np.finfo(np.float64).max
_NAN_MARK = float(np.nextafter(_DBL_MAX, 0))  # 1.7976931348623155e308 stands for "nan" in the fast path
_TOKENS = (
    (b'"nan"', repr(_NAN_MARK).encode()),
    (b'"-inf"', b"-1.7976931348623157e308"),
    (b'"inf"', b"1.7976931348623157e308"),
)
# Kinds kept as lists of records on RankData attributes; any other declared kind goes to `records`.
KEPT = ("sampler", "replica", "full", "compile_check", "unused")


def _arrow_type(f: Field) -> pa.DataType:
    t = f.type
    if t.startswith("list["):
        return pa.list_(_arrow_type(Field(f.name, t[5:-1], f.per, f.fields)))
    if t == "dict":
        return pa.struct([pa.field(s.name, _arrow_type(s)) for s in f.fields])
    return {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}[t]


@functools.lru_cache(maxsize=4)
def _schemas(fields: tuple[Field, ...]) -> tuple[pa.Schema, pa.Schema, pa.Schema]:
    step = pa.schema([pa.field(f.name, _arrow_type(f)) for f in fields])
    return step, step.insert(0, pa.field("kind", pa.string())), step.append(pa.field("_line", pa.int64()))


def step_schema(which: int = 0) -> pa.Schema:
    """The Arrow schema of `step` records (records.KINDS): 0 plain, 1 with `kind`, 2 with `_line`."""
    return _schemas(records.KINDS["step"])[which]


@dataclass
class StepColumns:
    """The `step` records of one rank as columns.

    Per-step arrays have one entry per record; per-micro-step arrays are the concatenation of the
    records' lists, and ``offsets[i]:offsets[i+1]`` selects record ``i``'s micro-steps.
    """

    step: np.ndarray
    micro_steps: np.ndarray
    offsets: np.ndarray
    time: np.ndarray
    zero_grad: np.ndarray  # -1 where not recorded
    sched_steps: np.ndarray  # -1 where not recorded
    lr: np.ndarray  # lr of param group 0
    skipped: np.ndarray
    scale: np.ndarray  # nan without a scaler
    found_inf: np.ndarray
    unscale_calls: np.ndarray
    # per micro-step
    losses: np.ndarray
    fn_value: np.ndarray  # loss-function output, nan where not seen
    fn_sum: np.ndarray  # reduction was "sum"
    fn_n_valid: np.ndarray  # nan where unknown
    samples: np.ndarray
    tokens: np.ndarray  # nan where unknown
    sync: np.ndarray
    grad_sq_local: np.ndarray
    grad_sq_global: np.ndarray
    input_hashes: np.ndarray  # bytes (dtype "S"), b"" where not recorded
    # sparse per-step facts: (step, value)
    clip_step: np.ndarray  # one row per clip_grad_norm_ call: its optimizer step
    clip: np.ndarray  # [calls, len(CLIP_COLUMNS)]: CLIP_COLUMNS; flags as 1/0, nan where not recorded
    nonfinite: list[tuple[int, dict[str, Any]]]
    autocast: set[str]
    # where the writer recorded a non-finite loss ("nan"/"inf"); `losses` is also nan where no
    # loss was recorded or the value was not a number (a data-quality problem, not a non-finite loss)
    loss_nonfinite: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    # numeric step fields declared in rundir/records.py that no attribute above reads yet (per step, or
    # per micro-step aligned with `offsets`): a new field is readable without touching this file
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.step.shape[0])

    def last_micro_index(self) -> np.ndarray:
        """Index into the per-micro arrays of each record's last micro-step (-1 for none)."""
        return np.where(self.micro_steps > 0, self.offsets[1:] - 1, -1)


@dataclass
class RankData:
    """Everything one rank file holds (records of unknown kinds are counted, not kept)."""

    rank: int
    header: dict[str, Any] | None = None
    configs: list[dict[str, Any]] = field(default_factory=list)
    steps: StepColumns | None = None
    sampler: list[dict[str, Any]] = field(default_factory=list)
    replica: list[dict[str, Any]] = field(default_factory=list)
    full: list[dict[str, Any]] = field(default_factory=list)
    compile_check: list[dict[str, Any]] = field(default_factory=list)
    unused: list[dict[str, Any]] = field(default_factory=list)
    probe_errors: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    unknown_kinds: int = 0
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # other declared kinds
    headers_seen: int = 0
    lines: int = 0

    def config(self, what: str) -> dict[str, Any] | None:
        """The last `config` record of this kind (later records describe the current state)."""
        for rec in self.configs[::-1]:  # (reversed() of dict[str, Any] items is Any to mypy)
            if rec.get("what") == what:
                return rec
        return None


class Problems:
    """Sentences about a file; ``damage`` marks those that make its data doubtful (not merely partial)."""

    def __init__(self) -> None:
        self.all: list[str] = []
        self.damage: list[str] = []

    def add(self, text: str, damage: bool = True) -> None:
        self.all.append(text)
        if damage:
            self.damage.append(text)


# --- opening files safely ---------------------------------------------------------------------


def data_end(fd: int, size: int) -> int:
    """Where the last written data of a file ends: a hole at the end (a file preallocated or
    extended and never written, e.g. by a crash) is not data, and reading it would cost memory for
    bytes that are not there. File systems without hole support report no hole."""
    end, off = 0, 0
    try:
        while off < size:
            start = os.lseek(fd, off, os.SEEK_DATA)
            off = end = os.lseek(fd, start, os.SEEK_HOLE)
    except OSError as exc:  # ENXIO: no data after `off` (none at all: end 0); else unsupported
        end = end if exc.errno == errno.ENXIO else size
    except AttributeError:  # no SEEK_DATA on this platform
        end = size
    finally:
        os.lseek(fd, 0, os.SEEK_SET)  # the seeks above moved the offset the reads start from
    return min(end, size)


def read_regular(path: Path, limit: int | None = None, holes: list[int] | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file (not a symlink, FIFO, device or directory).

    Raises OSError with a readable message otherwise. O_NONBLOCK: opening a FIFO never blocks;
    O_NOFOLLOW: a symlink (or a symlink loop) is refused. Reads at most the size at open time
    (and at most ``limit`` bytes), so a file that grows while we read it cannot keep us reading.
    A hole at the end of the file is not read; its size is appended to ``holes`` when given.
    """
    fd, st = open_regular(path)
    try:
        size = st.st_size if limit is None else min(st.st_size, limit)
        if st.st_blocks * 512 < size:  # sparse: stop where the written data ends
            end = data_end(fd, size)
            if end < size and holes is not None:
                holes.append(size - end)
            size = end
        chunks, got = [], 0
        while got < size:
            b = os.read(fd, size - got)  # one read, one buffer: no join (a copy) of chunks
            if not b:
                break
            chunks.append(b)
            got += len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """An open descriptor of ``path`` and its stat, if it is a regular file (see read_regular)."""
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise OSError(f"{path.name} is a symlink (not followed)") from exc
        raise OSError(f"{path.name}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


# --- parsing ------------------------------------------------------------------------------------


def _arrow(blob: bytes | memoryview, schema: pa.Schema) -> pa.Table | None:
    """``blob`` (JSON Lines) parsed by Arrow with ``schema``; None when Arrow refuses it. The
    writer's non-finite strings are mapped only after a first refusal (scanning costs time)."""
    for attempt in range(2):
        try:
            return pj.read_json(
                pa.BufferReader(pa.py_buffer(blob)),  # no copy of the file's bytes
                read_options=pj.ReadOptions(block_size=BLOCK_BYTES),
                parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
            )
        except (pa.ArrowException, ValueError, OverflowError):
            blob = bytes(blob)  # `in` on a memoryview compares single bytes, not substrings
            if attempt == 0 and any(old in blob for old, _ in _TOKENS):
                for old, new in _TOKENS:
                    blob = blob.replace(old, new)
                continue
            return None
    return None


def _lines_table(lines: list[bytes], numbers: list[int]) -> pa.Table | None:
    """Step lines of the writer's own form parsed by Arrow; None when Arrow refuses any of them."""
    tb = _arrow(b"\n".join(lines) + b"\n", step_schema())
    if tb is None or tb.num_rows != len(lines):
        return None
    return tb.append_column("_line", pa.array(numbers, pa.int64()))


def _whole_file(body: memoryview, nonblank: np.ndarray) -> pa.Table | None:
    """All lines of a file at once (the usual case: nothing damaged); the `step` rows, or None."""
    tb = _arrow(body, step_schema(1))
    if tb is None or tb.num_rows != len(nonblank):
        return None
    is_step = pc.equal(tb["kind"], "step")
    lines = pc.filter(pa.array(nonblank, pa.int64()), is_step)
    return tb.filter(is_step).drop_columns(["kind"]).append_column("_line", lines)


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    """A sanitized step record projected on the declared fields (Arrow takes no unknown keys)."""
    out = {}
    for f in records.KINDS["step"]:
        v = rec.get(f.name)
        if f.fields and v is not None:
            if f.type == "dict":
                v = {s.name: v.get(s.name) for s in f.fields}
            else:
                v = [None if x is None else {s.name: x.get(s.name) for s in f.fields} for x in v]
        out[f.name] = v
    return out


def _scan_lines(raw: bytes, prefix: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each complete line of ``raw`` starts and ends (its newline), and which lines begin
    with ``prefix`` — found by numpy over the bytes, without a Python object per line."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    candidates = np.flatnonzero((ends - starts) >= len(prefix))
    for j, byte in enumerate(prefix):  # byte by byte, keeping the lines that still match: O(lines) memory
        candidates = candidates[buf[starts[candidates] + j] == byte]
    step_like = np.zeros(len(ends), dtype=bool)
    step_like[candidates] = True
    return starts, ends, step_like


def parse_rank_bytes(
    raw: bytes, rank: int, probs: Problems, lines_before: int = 0, header: dict[str, Any] | None = None
) -> tuple[RankData, pa.Table]:
    """Every record of one rank file: non-step records as dicts, step records as an Arrow table.

    ``lines_before``/``header``: ``raw`` continues a file whose first lines were read before
    (ddp_doctor.watch reads a growing file in pieces): line numbers in the problems count from the
    file's start, and the header read with an earlier piece bounds the step numbers."""
    data = RankData(rank=rank)
    starts, ends, step_like = _scan_lines(raw, records.line_prefix("step"))
    data.lines = len(ends)
    tail = raw[int(ends[-1]) + 1 :] if len(ends) else raw  # b"" when the file ends with a newline
    if tail.strip():
        probs.add(truncated_note(rank, len(tail)), damage=False)
    fast_no = np.flatnonzero(step_like) + 1  # line numbers (from 1) of the writer's step lines
    slow_steps: list[tuple[int, dict[str, Any]]] = []
    bad: list[int] = []
    wrong: dict[str, int] = {}
    others: list[int] = []
    # every other line (the few non-step records, or everything in a file from another writer)
    rest = np.flatnonzero(~step_like)
    for lineno, a, b in zip((rest + 1).tolist(), starts[rest].tolist(), ends[rest].tolist()):
        line = raw[a:b]
        if not line.strip():
            continue
        others.append(lineno)
        rec = _decode(line)
        if rec is None:
            bad.append(lineno)
            continue
        _dispatch(rec, lineno, data, slow_steps, bad, wrong)
    tables = []
    whole = None
    if len(fast_no) and not bad:  # one pass over the whole file: the common case
        nonblank = np.sort(np.concatenate((fast_no, np.asarray(others, dtype=np.int64))))
        whole = _whole_file(memoryview(raw)[: len(raw) - len(tail)], nonblank)
    if whole is not None:
        tables.append(whole)
        slow_steps = []  # Arrow read those too
        fast_no = fast_no[:0]
    for i in range(0, len(fast_no), CHUNK_LINES):
        at = fast_no[i : i + CHUNK_LINES] - 1
        nums = (at + 1).tolist()
        chunk = [raw[a:b] for a, b in zip(starts[at].tolist(), ends[at].tolist())]
        tb = _lines_table(chunk, nums)
        if tb is not None:
            tables.append(tb)
            continue
        for line, lineno in zip(chunk, nums):  # Arrow refused the chunk: line by line
            rec = _decode(line)
            if rec is None:
                bad.append(lineno)
            else:
                _dispatch(rec, lineno, data, slow_steps, bad, wrong)
    if slow_steps:
        rows = [{**_row(r), "_line": n} for n, r in slow_steps]
        tables.append(pa.Table.from_pylist(rows, schema=step_schema(2)))
    if tables:
        table = pa.concat_tables(tables)
        if slow_steps and len(tables) > 1:
            table = table.take(pc.sort_indices(table["_line"]))
    else:
        table = step_schema(2).empty_table()
    if bad:
        bad.sort()
        listed = ", ".join(str(n + lines_before) for n in bad[:MAX_LISTED_BAD_LINES])
        more = f" and {len(bad) - MAX_LISTED_BAD_LINES} more" if len(bad) > MAX_LISTED_BAD_LINES else ""
        probs.add(f"rank {rank}: {len(bad)} corrupt line(s) skipped (not a JSON record): line {listed}{more}")
    if wrong:
        shown = ", ".join(f"{k} ×{n}" for k, n in sorted(wrong.items())[:8])
        probs.add(f"rank {rank}: field(s) with the wrong type ignored: {shown}")
    bound = (lines_before + data.lines) * _stride(data.header or header)
    table = _validate_steps(table, bound, rank, probs)
    return data, table


# A rank file written from a sparse log (rundir/sources/logs.py) holds one step record per logged
# step; its header's `steps_per_line` stretches the bound on believable step numbers, capped so that
# no header can size an allocation by itself.
MAX_STEPS_PER_LINE = 10_000


def _stride(header: dict[str, Any] | None) -> int:
    value = (header or {}).get("steps_per_line")
    if isinstance(value, int) and not isinstance(value, bool) and value > 1:
        return min(value, MAX_STEPS_PER_LINE)
    return 1


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
        return None
    return rec if isinstance(rec, dict) else None


def _dispatch(
    rec: dict[str, Any],
    lineno: int,
    data: RankData,
    slow_steps: list[tuple[int, dict[str, Any]]],
    bad: list[int],
    wrong: dict[str, int],
) -> None:
    kind = rec.get("kind")
    if not isinstance(kind, str):
        bad.append(lineno)
        return
    names: list[str] = []
    clean = records.sanitize(rec, names)
    for n in names:
        wrong[n] = wrong.get(n, 0) + 1
    if clean is None:
        bad.append(lineno)
        return
    if kind == "step":
        if isinstance(clean.get("step"), int):
            slow_steps.append((lineno, clean))
        else:
            bad.append(lineno)
    elif kind == "config":
        data.configs.append(clean)
    elif kind in KEPT:
        getattr(data, kind).append(clean)
    elif kind == "header":
        data.headers_seen += 1
        if data.header is None:
            data.header = clean
    elif kind == "probe_error":
        data.probe_errors.append(clean)
    elif kind == "end":
        data.end = clean
    elif kind in records.KINDS:
        data.records.setdefault(kind, []).append(clean)
    else:
        data.unknown_kinds += 1


def truncated_note(rank: int, size: int) -> str:
    return f"rank {rank}: last line is truncated (no newline; {size} bytes ignored) — the run was killed or is still writing"


def duplicates_note(rank: int, n: int, steps: np.ndarray) -> str:
    shown = ", ".join(str(int(s)) for s in steps[:5])
    return (
        f"rank {rank}: {n} duplicate step record(s) ignored (step {shown}…; the first of each "
        "kept) — two processes wrote this file (a restart, or two runs into one directory)"
    )


def _validate_steps(table: pa.Table, n_lines: int, rank: int, probs: Problems) -> pa.Table:
    """Drop steps no writer could have written: no step number, a number beyond the lines of the
    file (steps count from 0, one record each), duplicates (the first is kept)."""
    if table.num_rows == 0:
        return table
    step = _ints(table["step"], -1)
    ok = (step >= 0) & (step <= n_lines)
    if not ok.all():
        probs.add(
            f"rank {rank}: {int((~ok).sum())} step record(s) with a missing or impossible step number "
            f"(negative or beyond the {n_lines} lines of the file) ignored"
        )
    idx = np.flatnonzero(ok)
    _, first = np.unique(step[idx], return_index=True)
    keep = np.sort(idx[first])
    if len(keep) < len(idx):
        dup = np.setdiff1d(idx, keep)
        probs.add(duplicates_note(rank, len(dup), np.unique(step[dup])))
    if len(keep) < table.num_rows:
        table = table.take(pa.array(keep))
    return table


# --- Arrow table → numpy columns ----------------------------------------------------------------


def _floats(arr: pa.Array) -> np.ndarray:
    """Numbers as float64: nulls → nan, the fast path's stand-ins → ±inf / nan."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.float64)
    out = np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    big = np.abs(out) >= _NAN_MARK
    if big.any():
        out = np.where(np.abs(out) == _DBL_MAX, np.copysign(np.inf, out), np.where(big, np.nan, out))
    return out


def _recorded_nonfinite(arr: pa.Array) -> np.ndarray:
    """Where the writer recorded a non-finite number (not where nothing was recorded)."""
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    recorded: np.ndarray = valid & ~np.isfinite(_floats(arr))
    return recorded


def _bools(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def _ints(arr: pa.Array, default: int) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, default).to_numpy(zero_copy_only=False), dtype=np.int64)


def _list(table: pa.Table, name: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """A list column as (flat values, start of each row's values, length of each row)."""
    col = table[name].combine_chunks()
    lengths = np.asarray(pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False), np.int64)
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths):
        np.cumsum(lengths[:-1], out=starts[1:])
    return col.flatten(), starts, lengths


def _fixed_width(arr: pa.Array) -> np.ndarray:
    """A non-null Arrow binary array as numpy bytes (dtype "S<longest>", NUL-padded): what
    ``np.array(arr.to_pylist(), dtype="S")`` gives, by copying the bytes into place instead of
    building a Python object per value."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4)
    lengths = np.diff(offsets)
    width = max(int(lengths.max()), 1)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    out = np.zeros((len(arr), width), dtype=np.uint8)
    row = np.repeat(np.arange(len(arr)), lengths)
    out[row, np.arange(len(data)) - np.repeat(offsets[:-1] - offsets[0], lengths)] = data
    return out.view(f"S{width}").reshape(-1)


def _align(
    values: np.ndarray, lengths: np.ndarray, micro: np.ndarray, offsets: np.ndarray, fill: Any
) -> np.ndarray:
    """Per-row lists (flat ``values``, ``lengths``) cut/padded to ``micro`` entries per row."""
    if np.array_equal(lengths, micro):
        return values
    out = np.full(int(offsets[-1]), fill, dtype=values.dtype)
    row = np.repeat(np.arange(len(lengths)), lengths)
    within = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keep = within < micro[row]
    out[offsets[row[keep]] + within[keep]] = values[keep]
    return out


_STEP_ATTRS = {
    "step",
    "time",
    "micro_steps",
    "losses",
    "loss_fn",
    "samples",
    "tokens",
    "input_hashes",
    "sync",
    "grad_sq_local",
    "grad_sq_global",
    "zero_grad",
    "sched_steps",
    "lr",
    "skipped",
    "scale",
    "found_inf",
    "clip",
    "unscale_calls",
    "nonfinite",
    "autocast",
    "dt",
}


def to_columns(table: pa.Table, rank: int, probs: Problems | None = None) -> StepColumns:
    """StepColumns from a validated step table (fresh or from the cache)."""
    n = table.num_rows
    step = _ints(table["step"], -1)
    micro_lists = [f.name for f in records.KINDS["step"] if f.per == "micro"]
    listed = {name: _list(table, name) for name in micro_lists}
    longest = np.max(np.stack([ln for _, _, ln in listed.values()]), axis=0) if n else np.zeros(0, np.int64)
    declared = _ints(table["micro_steps"], -1)
    negative = int(pc.sum(pc.less(table["micro_steps"], 0)).as_py() or 0) if n else 0
    if negative and probs is not None:  # missing counts are null; a negative one is damage
        probs.add(
            f"rank {rank}: {negative} step record(s) with a negative micro_steps; their lists' length used"
        )
    micro = np.where(declared < 0, longest, declared)
    over = micro > longest
    if over.any():  # a count the lists do not back (micro_steps 1e9) sizes nothing
        if probs is not None:
            probs.add(
                f"rank {rank}: {int(over.sum())} step record(s) claim more micro-steps than their lists hold"
            )
        micro = np.where(over, longest, micro)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(micro, out=offsets[1:])

    def fl(name: str) -> np.ndarray:
        flat, _, lengths = listed[name]
        return _align(_floats(flat), lengths, micro, offsets, np.nan)

    fn_flat, _, fn_len = listed["loss_fn"]
    fn_valid = np.asarray(fn_flat.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    fn_value = _align(
        np.where(fn_valid, _floats(fn_flat.field("value")), np.nan), fn_len, micro, offsets, np.nan
    )
    fn_sum = _align(
        np.asarray(
            pc.fill_null(pc.equal(fn_flat.field("reduction"), "sum"), False).to_numpy(zero_copy_only=False)
        )
        & fn_valid,
        fn_len,
        micro,
        offsets,
        False,
    )
    fn_n = _align(
        np.where(fn_valid, _floats(fn_flat.field("n_valid")), np.nan), fn_len, micro, offsets, np.nan
    )
    h_flat, _, h_len = listed["input_hashes"]
    hashes = pc.fill_null(pc.utf8_slice_codeunits(h_flat, 0, 32), "").cast(pa.binary())
    hashes_np = _fixed_width(hashes) if len(hashes) else np.zeros(0, dtype="S1")
    input_hashes = _align(hashes_np, h_len, micro, offsets, b"")
    sync = np.nan_to_num(fl("sync")).astype(np.int64)
    lr_flat, lr_start, lr_len = _list(table, "lr")
    lr_all = _floats(lr_flat)
    lr = np.where(
        lr_len > 0, lr_all[np.minimum(lr_start, max(len(lr_all) - 1, 0))] if len(lr_all) else np.nan, np.nan
    )
    clip_flat, _, clip_len = _list(table, "clip")
    clip = np.zeros((len(clip_flat), len(CLIP_COLUMNS)))
    clip_ok = np.asarray(clip_flat.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    for j, name in enumerate(CLIP_COLUMNS):
        clip[:, j] = _floats(pc.cast(clip_flat.field(name), pa.float64()))
    clip_rows = np.repeat(step, clip_len)[clip_ok]
    clip = clip[clip_ok]
    nf = table["nonfinite"]
    nonfinite = []
    if nf.null_count < n:
        mask = pc.is_valid(nf)
        for s, rec in zip(pc.filter(table["step"], mask).to_pylist(), pc.filter(nf, mask).to_pylist()):
            nonfinite.append((int(s), rec))
    autocast = {str(a) for a in pc.unique(pc.drop_null(table["autocast"].combine_chunks())).to_pylist()}
    extra: dict[str, np.ndarray] = {}
    for f in records.KINDS["step"]:
        if f.name in _STEP_ATTRS or f.name not in table.column_names:
            continue
        if f.type in ("int", "float", "bool"):
            extra[f.name] = _floats(table[f.name].combine_chunks())
        elif f.type in ("list[float]", "list[int]") and f.per == "micro":
            extra[f.name] = fl(f.name)
    return StepColumns(
        step=step,
        micro_steps=micro.astype(np.int64),
        offsets=offsets,
        time=_floats(table["time"].combine_chunks()),
        zero_grad=_ints(table["zero_grad"], -1),
        sched_steps=_ints(table["sched_steps"], -1),
        lr=np.asarray(lr, dtype=np.float64),
        skipped=_bools(table["skipped"].combine_chunks()),
        scale=_floats(table["scale"].combine_chunks()),
        found_inf=_bools(table["found_inf"].combine_chunks()),
        unscale_calls=_ints(table["unscale_calls"], 0),
        losses=fl("losses"),
        loss_nonfinite=_align(
            _recorded_nonfinite(listed["losses"][0]), listed["losses"][2], micro, offsets, False
        ).astype(bool),
        fn_value=fn_value,
        fn_sum=np.asarray(fn_sum, dtype=bool),
        fn_n_valid=fn_n,
        samples=fl("samples"),
        tokens=fl("tokens"),
        sync=sync,
        grad_sq_local=fl("grad_sq_local"),
        grad_sq_global=fl("grad_sq_global"),
        input_hashes=input_hashes,
        clip_step=clip_rows.astype(np.int64),
        clip=clip,
        nonfinite=nonfinite,
        autocast=autocast,
        extra=extra,
    )


# --- one rank file, with its cache ------------------------------------------------------------

_META_LISTS = ("configs", "sampler", "replica", "full", "compile_check", "unused", "probe_errors")
_COLUMN_ARRAYS = tuple(
    f.name for f in dataclasses.fields(StepColumns) if f.name not in ("nonfinite", "autocast", "extra")
)


def cache_path(path: Path) -> Path:
    return path.parent.parent / records.CACHE_DIR / (path.stem + ".arrow")


def file_key(path: Path) -> dict[str, int]:
    st = os.lstat(path)
    schema = zlib.crc32(str(step_schema()).encode())  # a field added to rundir/records.py invalidates caches
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ino": st.st_ino,
        "version": CACHE_VERSION,
        "schema": schema,
    }


def _meta(data: RankData, probs: Problems, key: dict[str, int]) -> dict[str, Any]:
    c = data.steps
    assert c is not None
    return {
        "key": key,
        "problems": probs.all,
        "damage": probs.damage,
        "header": data.header,
        "end": data.end,
        "unknown_kinds": data.unknown_kinds,
        "records": data.records,
        "headers_seen": data.headers_seen,
        "lines": data.lines,
        "nonfinite": c.nonfinite,
        "autocast": sorted(c.autocast),
        "extra": sorted(c.extra),
        **{k: getattr(data, k) for k in _META_LISTS},
    }


def _column(a: np.ndarray) -> pa.Array:
    """One numpy array as a one-row list column (arrays of different lengths share one table)."""
    if a.dtype.kind == "S":
        width = max(a.dtype.itemsize, 1)
        values = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(width), len(a), [None, pa.py_buffer(a.astype(f"S{width}").tobytes())]
        )
    else:
        values = pa.array(a.reshape(-1))
    return pa.LargeListArray.from_arrays(pa.array([0, len(values)], pa.int64()), values)


def _array(col: pa.ChunkedArray, shape1: int | None = None) -> np.ndarray:
    values = col.chunk(0).values
    if pa.types.is_fixed_size_binary(values.type):
        w = values.type.byte_width
        out = np.frombuffer(values.buffers()[1], dtype=f"S{w}", count=len(values), offset=values.offset * w)
    elif values.null_count == 0 and (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        # the column's own buffer, no copy; also keeps pyarrow's to_numpy from importing pandas
        # (0.15 s of a 1 s warm report)
        dtype = np.dtype(values.type.to_pandas_dtype())
        out = np.frombuffer(
            values.buffers()[1], dtype=dtype, count=len(values), offset=values.offset * dtype.itemsize
        )
    elif values.null_count == 0 and pa.types.is_boolean(values.type):
        bits = np.frombuffer(values.buffers()[1], dtype=np.uint8)
        out = np.unpackbits(bits, bitorder="little", count=values.offset + len(values))[
            values.offset :
        ].astype(bool)
    else:
        out = values.to_numpy(zero_copy_only=False)
    return out.reshape(-1, shape1) if shape1 else out


def save_cache(path: Path, data: RankData, probs: Problems, key: dict[str, int]) -> bool:
    """Write the columns as an Arrow IPC file through a fresh temp file renamed over the old one;
    no symlink is followed (a cache directory that is a symlink, or not ours to write: no cache)."""
    out = cache_path(path)
    c = data.steps
    try:
        with contextlib.suppress(FileExistsError):
            out.parent.mkdir(mode=0o700)
        if c is None or not stat.S_ISDIR(os.lstat(out.parent).st_mode):
            return False
        arrays = {k: getattr(c, k) for k in _COLUMN_ARRAYS} | {f"extra.{k}": v for k, v in c.extra.items()}
        table = pa.table({k: _column(v) for k, v in arrays.items()})
        table = table.replace_schema_metadata({b"ddp_doctor": json.dumps(_meta(data, probs, key)).encode()})

        def produce(fh: BinaryIO) -> None:
            with pa.ipc.new_file(fh, table.schema) as writer:
                writer.write_table(table)

        write_with(out, produce, mode=PRIVATE_FILE)
    except (OSError, ValueError, TypeError, pa.ArrowException, RecursionError, AssertionError):
        return False  # a read-only run directory: no cache, no problem
    return True


def load_cache(path: Path, rank: int, key: dict[str, int]) -> tuple[RankData, Problems] | None:
    try:
        # read, not mmap'ed: 0.07 s faster warm at 8 × 100k, but a cache file that another
        # report replaces on a network file system can SIGBUS a mapping; a read fails cleanly
        table = pa.ipc.open_file(pa.py_buffer(read_regular(cache_path(path)))).read_all()
        meta = json.loads(table.schema.metadata[b"ddp_doctor"])
        if meta["key"] != key:
            return None
        cols = {k: _array(table[k], len(CLIP_COLUMNS) if k == "clip" else None) for k in _COLUMN_ARRAYS}
        steps = StepColumns(
            **cols,
            nonfinite=[(int(s), r) for s, r in meta["nonfinite"]],
            autocast=set(meta["autocast"]),
            extra={k: _array(table[f"extra.{k}"]) for k in meta["extra"]},
        )
        data = RankData(
            rank=rank,
            header=meta["header"],
            steps=steps,
            end=meta["end"],
            unknown_kinds=int(meta["unknown_kinds"]),
            records=meta["records"],
            headers_seen=int(meta["headers_seen"]),
            lines=int(meta["lines"]),
            **{k: list(meta[k]) for k in _META_LISTS},
        )
        probs = Problems()
        probs.all, probs.damage = list(meta["problems"]), list(meta["damage"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, pa.ArrowException):
        return None
    return data, probs


def parse_rank(path: Path, rank: int) -> tuple[RankData, Problems]:
    """One rank file parsed (no cache)."""
    probs = Problems()
    holes: list[int] = []
    try:
        raw = read_regular(path, holes=holes)
    except OSError as exc:
        probs.add(f"rank {rank}: cannot read {exc}; ignored")
        return RankData(rank=rank, steps=to_columns(step_schema(2).empty_table(), rank)), probs
    if holes:
        probs.add(hole_note(rank, holes[0]))
    data, table = parse_rank_bytes(raw, rank, probs)
    data.steps = to_columns(table, rank, probs)
    file_problems(data, probs)
    return data, probs


def hole_note(rank: int, size: int) -> str:
    return (
        f"rank {rank}: the last {size} bytes of the file were never written (a hole: the file "
        "was preallocated or extended, e.g. before a crash); ignored"
    )


def file_problems(data: RankData, probs: Problems) -> None:
    """The problems of a rank file read whole: no or several headers, probe instruments that failed."""
    rank = data.rank
    if data.headers_seen == 0:
        probs.add(f"rank {rank}: no header record")
    elif data.headers_seen > 1:
        probs.add(
            f"rank {rank}: {data.headers_seen} header records — more than one process wrote this file "
            "(a restart, or two runs into one directory); the first header is used"
        )
    for err in data.probe_errors:
        probs.add(
            f"rank {rank}: probe instrument {str(err.get('instrument'))[:80]!r} failed at step "
            f"{err.get('step')} and was disabled: {str(err.get('error'))[:300]}",
            damage=False,
        )


def cacheable(key: dict[str, int] | None) -> bool:
    """Whether a file can be cached (the caller decides whether the run is big enough to)."""
    return key is not None


def key_of(path: Path) -> dict[str, int] | None:
    try:
        return file_key(path)
    except OSError:
        return None


def read_rank(path: Path, rank: int, use_cache: bool) -> tuple[RankData, Problems]:
    """One rank file: from the cache when unchanged since it was parsed, else parsed (and cached)."""
    key = key_of(path)
    if use_cache and cacheable(key):
        hit = load_cache(path, rank, key)  # type: ignore[arg-type]
        if hit is not None:
            return hit
    data, probs = parse_rank(path, rank)
    if use_cache and cacheable(key) and key_of(path) == key:  # unchanged while we read it
        save_cache(path, data, probs, key)  # type: ignore[arg-type]
    return data, probs


def num(value: Any) -> float:
    """A recorded number as a float: ``"nan"``/``"inf"``/``"-inf"`` strings and null become floats."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan
