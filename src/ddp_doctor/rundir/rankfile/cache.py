"""The column cache of one rank file: a finished run is parsed once, a warm read is one read of a file.

The numpy columns (:class:`~.columns.StepColumns`) and the file's other records are cached as an
Arrow IPC file in RUN/.ddp-doctor-cache/ (keyed by size, mtime, inode and the step schema; written
to a temp file and renamed, never through a symlink), so a warm read is no parse, no conversion.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.ipc  # noqa: F401 - pa.ipc

from ddp_doctor.core.safe_io import PRIVATE_FILE, ensure_private_dir, read_regular, write_with
from ddp_doctor.rundir import records
from ddp_doctor.rundir.rankfile.columns import CLIP_COLUMNS, Problems, RankData, StepColumns, broadcast
from ddp_doctor.rundir.rankfile.scan import parse_rank, step_schema_crc

CACHE_VERSION = 7  # 7: constant columns stored as one value (columns.compact)
CACHE_MIN_BYTES = 4 * 2**20  # runs (all rank files together) smaller than this are not cached

_META_LISTS = ("configs", "sampler", "replica", "full", "compile_check", "unused", "probe_errors")
_COLUMN_ARRAYS = tuple(
    f.name for f in dataclasses.fields(StepColumns) if f.name not in ("nonfinite", "autocast", "extra")
)


def cache_path(path: Path) -> Path:
    return path.parent.parent / records.CACHE_DIR / (path.stem + ".arrow")


def file_key(path: Path) -> dict[str, int]:
    st = os.lstat(path)
    schema = step_schema_crc()  # a field added to rundir/records.py invalidates caches
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


def save_cache(
    path: Path, data: RankData, probs: Problems, key: dict[str, int], out: Path | None = None
) -> bool:
    """Write the columns as an Arrow IPC file (``out``, default :func:`cache_path`) through a fresh
    temp file renamed over the old one; no symlink is followed (a cache directory that is a
    symlink, or not ours to write: no cache)."""
    out = out or cache_path(path)
    c = data.steps
    try:
        if not ensure_private_dir(out.parent) or c is None:
            return False
        arrays = {k: getattr(c, k) for k in _COLUMN_ARRAYS} | {f"extra.{k}": v for k, v in c.extra.items()}
        constant = {k: len(v) for k, v in arrays.items() if v.ndim == 1 and v.strides == (0,) and len(v)}
        table = pa.table({k: _column(v[:1] if k in constant else v) for k, v in arrays.items()})
        meta = _meta(data, probs, key) | {"constant": constant}
        table = table.replace_schema_metadata({b"ddp_doctor": json.dumps(meta).encode()})

        def produce(fh: BinaryIO) -> None:
            with pa.ipc.new_file(fh, table.schema) as writer:
                writer.write_table(table)

        write_with(out, produce, mode=PRIVATE_FILE)
    except (OSError, ValueError, TypeError, pa.ArrowException, RecursionError, AssertionError):
        return False  # a read-only run directory: no cache, no problem
    return True


def load_cache(
    path: Path, rank: int, key: dict[str, int], where: Path | None = None
) -> tuple[RankData, Problems] | None:
    """The cached columns of ``path`` (from ``where``, default :func:`cache_path`) if their key is
    ``key``; None for a miss, a damaged or foreign file."""
    try:
        # read, not mmap'ed: 0.07 s faster warm at 8 × 100k, but a cache file that another
        # report replaces on a network file system can SIGBUS a mapping; a read fails cleanly
        table = pa.ipc.open_file(pa.py_buffer(read_regular(where or cache_path(path)))).read_all()
        meta = json.loads(table.schema.metadata[b"ddp_doctor"])
        if meta["key"] != key:
            return None
        constant: dict[str, int] = meta["constant"]

        def column(name: str) -> np.ndarray:
            a = _array(table[name], len(CLIP_COLUMNS) if name == "clip" else None)
            return broadcast(a, int(constant[name])) if name in constant else a

        steps = StepColumns(
            **{k: column(k) for k in _COLUMN_ARRAYS},
            nonfinite=[(int(s), r) for s, r in meta["nonfinite"]],
            autocast=set(meta["autocast"]),
            extra={k: column(f"extra.{k}") for k in meta["extra"]},
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
