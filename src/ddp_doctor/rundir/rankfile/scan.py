"""Read one rank file (RUN/ranks/rank-NNNNN.jsonl) into records and a step table: fast where it can, tolerant always.

How (docs/report.md, "Reading rank files", has the measurements behind the choice):

1. The file is opened without following symlinks and only if it is a regular file (a FIFO would
   block, a device never end), and read up to its size at open time (a live run keeps growing).
2. Lines that begin the way the writer begins a `step` record (:func:`records.line_prefix`) are
   found by numpy over the bytes (:func:`_scan_lines`: no Python object per line) and parsed by
   pyarrow's JSON reader into an Arrow table with the schema of :data:`records.KINDS`["step"] —
   the whole file from its own buffer when nothing is damaged, else in chunks of
   :data:`CHUNK_LINES` lines. The writer's non-finite strings are mapped to
   values Arrow reads (±DBL_MAX for "±inf", the double below DBL_MAX for "nan"; mapped back by
   :mod:`.columns`), so a recorded non-finite value stays distinct from a value not recorded (null).
3. A chunk that Arrow refuses (a damaged line, a wrong type, a line from another writer) is parsed
   line by line with ``json.loads`` and type-checked field by field (:func:`records.sanitize`): a
   damaged line costs that line, a wrong field that field, never the file. Every other line (the
   few non-step records) takes this path too.
4. Steps are validated (numbers within what the bytes can hold, duplicates dropped, micro-step
   counts bounded by the lists present) so no number in the data sizes an allocation by itself.
"""

from __future__ import annotations

import functools
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ddp_doctor.core.safe_io import read_regular
from ddp_doctor.rundir import records
from ddp_doctor.rundir.rankfile.columns import _NAN_MARK, Problems, RankData, _ints, to_columns
from ddp_doctor.rundir.records import Field

CHUNK_LINES = 32768
MAX_LISTED_BAD_LINES = 5
# Arrow parses blocks of this size in parallel threads; a longer line fails its chunk over to the
# per-line path (slower, same result).
BLOCK_BYTES = 1 << 20
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


_LAST: list[Any] = [None, None]  # (the `step` fields, their schemas): hashing the fields costs ~20 µs


def step_schema(which: int = 0) -> pa.Schema:
    """The Arrow schema of `step` records (records.KINDS): 0 plain, 1 with `kind`, 2 with `_line`."""
    fields = records.KINDS["step"]
    if _LAST[0] is not fields:
        _LAST[:] = [fields, _schemas(fields)]
    schemas: tuple[pa.Schema, pa.Schema, pa.Schema] = _LAST[1]
    return schemas[which]


def step_schema_crc() -> int:
    """A CRC-32 of the `step` schema (cache keys: a field added to rundir/records.py invalidates
    them); str() of the schema takes ~0.1 ms, so it is computed once per schema."""
    schema = step_schema()
    if _CRC[0] is not schema:
        _CRC[:] = [schema, zlib.crc32(str(schema).encode())]
    crc: int = _CRC[1]
    return crc


_CRC: list[Any] = [None, 0]


# opening files safely: core/safe_io.py (read_regular, open_regular, data_end)


# --- parsing ------------------------------------------------------------------------------------


def _arrow(blob: bytes | memoryview, schema: pa.Schema, map_nonfinite: bool = True) -> pa.Table | None:
    """``blob`` (JSON Lines) parsed by Arrow with ``schema``; None when Arrow refuses it. The
    writer's non-finite strings are mapped only after a first refusal (scanning costs time), and
    not at all without ``map_nonfinite`` (the lines of several files at once: a file's lines must
    parse as they would alone)."""
    for attempt in range(2 if map_nonfinite else 1):
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


def parse_rank_bytes(  # noqa: PLR0915 - one pass over the bytes: scan, fast path, chunked and per-line fallbacks share its state
    raw: bytes,
    rank: int,
    probs: Problems,
    lines_before: int = 0,
    header: dict[str, Any] | None = None,
    step_bound: int | None = None,
) -> tuple[RankData, pa.Table]:
    """Every record of one rank file: non-step records as dicts, step records as an Arrow table.

    ``lines_before``/``header``: ``raw`` continues a file whose first lines were read before
    (ddp_doctor.watch reads a growing file in pieces): line numbers in the problems count from the
    file's start, and the header read with an earlier piece bounds the step numbers.
    ``step_bound``: the largest believable step number when ``raw`` is pieces of a file
    (rundir/rollup_read.py: the file's size in bytes, as every step record takes a line)."""
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
    bound = (
        step_bound if step_bound is not None else (lines_before + data.lines) * _stride(data.header or header)
    )
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
