"""Warm caches of the report's rollup path (rundir/rollup_read.py), in RUN/.ddp-doctor-cache/.

Two kinds, both written through a temp file renamed into place (core/safe_io.py; a cache directory
that is a symlink or not a directory: no cache), both keyed by what they were computed from, so a
rank file or an index that changed (grew, was replaced, rewritten) is read again:

* ``rollup-index.bin`` — the index arrays of every rank (rollup_read.RankWindows), one file for the
  run: per rank the key of its rank file and of its index file (size, mtime, inode) and the arrays,
  concatenated over ranks. A warm report reads one file instead of parsing every index line; a rank
  whose key differs is parsed again and the file rewritten.
* ``rank-NNNNN.rollup-sK.arrow`` — the step columns of one rank's selected windows (the raw path's
  Arrow IPC cache format, rundir/rankfile/cache.py), one per rank and sample size (``K``: the even
  sample's windows; the report's wider second read has its own), keyed by the rank file's key, the
  selected windows and their bytes in the rank file.

The index file is a small container of numpy arrays: 8 bytes of magic, the length of a JSON header,
the header (names, dtypes, shapes and offsets of the arrays, the per-rank keys and scalars, a CRC-32
of the data), then the arrays' bytes. Anything wrong with it (short, another version, a dtype not
listed, a CRC that does not match, counts that do not add up) is a cache miss, never an exception.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ddp_doctor.core.safe_io import PRIVATE_FILE, ensure_private_dir, read_regular, write_with
from ddp_doctor.rundir import records
from ddp_doctor.rundir.rollup_index import index_path

VERSION = 1
# runs whose rank files hold fewer bytes than this are not cached (as the raw path's column cache:
# rundir/rankfile/cache.py CACHE_MIN_BYTES; tests patch this one)
CACHE_MIN_BYTES = 4 * 2**20
INDEX_CACHE = "rollup-index.bin"
_MAGIC = b"DDPDRIX1"
_DTYPES = frozenset({"<i8", "<u8", "<f8"})
_ALIGN = 8


def cache_dir(run_dir: Path) -> Path:
    return Path(run_dir) / records.CACHE_DIR


def _stat_key(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def index_key(run_dir: Path, rank_file: Path, rank: int, every: int | None) -> list[Any] | None:
    """What one rank's index arrays were computed from: its rank file, its index file (or none) and,
    for rollups computed from the rank file, their R; None when the rank file cannot be stat'ed."""
    own = _stat_key(rank_file)
    if own is None:
        return None
    return [VERSION, own, _stat_key(index_path(run_dir, rank)), every]


def _writable_dir(run_dir: Path) -> Path | None:
    out = cache_dir(run_dir)
    return out if ensure_private_dir(out) else None


def save_index(run_dir: Path, ranks: list[tuple[list[Any], dict[str, Any], dict[str, np.ndarray]]]) -> bool:
    """Write the index cache: per rank (key, scalars, arrays); arrays of one name are concatenated
    over ranks (their first dimension), so every rank must give the same names with the same
    trailing shape. False when it could not be written (a read-only run directory: no cache)."""
    where = _writable_dir(run_dir)
    if where is None or not ranks:
        return False
    names = sorted(ranks[0][2])
    try:
        arrays = {n: np.ascontiguousarray(np.concatenate([r[2][n] for r in ranks])) for n in names}
        counts = {n: [len(r[2][n]) for r in ranks] for n in names}
        specs, offset = [], 0
        for n in names:
            a = arrays[n]
            if a.dtype.str not in _DTYPES:
                return False
            specs.append({"name": n, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset})
            offset += -(-a.nbytes // _ALIGN) * _ALIGN
        crc = 0
        for n in names:
            crc = zlib.crc32(arrays[n].view(np.uint8).reshape(-1).data, crc)
        head = json.dumps(
            {
                "version": VERSION,
                "arrays": specs,
                "counts": counts,
                "keys": [r[0] for r in ranks],
                "scalars": [r[1] for r in ranks],
                "crc": crc,
            }
        ).encode()

        def produce(fh: BinaryIO) -> None:
            fh.write(_MAGIC + struct.pack("<Q", len(head)) + head)
            pad = -(len(_MAGIC) + 8 + len(head)) % _ALIGN
            fh.write(b"\0" * pad)
            for n in names:
                a = arrays[n]
                fh.write(a.view(np.uint8).reshape(-1).data)
                fh.write(b"\0" * (-a.nbytes % _ALIGN))

        write_with(where / INDEX_CACHE, produce, mode=PRIVATE_FILE)
    except (OSError, ValueError, TypeError):
        return False
    return True


Cached = dict[int, tuple[list[Any], dict[str, Any], dict[str, np.ndarray]]]


def load_index(run_dir: Path) -> tuple[Cached, str | None]:
    """The index cache as {rank: (key, scalars, arrays)} and, when a cache file was there but could
    not be used (damaged, another version, a symlink: module doc), why; ({}, None) when there is
    none. The arrays are read-only views of one buffer."""
    if not os.path.lexists(cache_dir(run_dir) / INDEX_CACHE):
        return {}, None
    try:
        got = _load_index(run_dir)
    except (OSError, ValueError, KeyError, TypeError, IndexError, struct.error, RecursionError) as exc:
        return {}, f"{type(exc).__name__}: {str(exc)[:100]}"
    return got, None


def _load_index(run_dir: Path) -> Cached:
    """The index cache; raises on anything wrong with it."""
    raw = read_regular(cache_dir(run_dir) / INDEX_CACHE)
    if raw[: len(_MAGIC)] != _MAGIC:
        raise ValueError("not an index cache (magic)")
    (n_head,) = struct.unpack_from("<Q", raw, len(_MAGIC))
    start = len(_MAGIC) + 8
    if n_head > len(raw) - start:
        raise ValueError("truncated header")
    head = json.loads(raw[start : start + n_head])
    body = start + n_head + (-(start + n_head) % _ALIGN)
    if not isinstance(head, dict) or head.get("version") != VERSION:
        raise ValueError("another version")
    keys, scalars, counts = head["keys"], head["scalars"], head["counts"]
    arrays: dict[str, np.ndarray] = {}
    crc = 0
    for spec in head["arrays"]:
        dtype = spec["dtype"]
        shape = [int(x) for x in spec["shape"]]
        if dtype not in _DTYPES or not shape or any(x < 0 for x in shape):
            raise ValueError(f"array {spec.get('name')!r}: dtype or shape not allowed")
        count = int(np.prod(shape))
        a = np.frombuffer(raw, dtype=np.dtype(dtype), count=count, offset=body + int(spec["offset"]))
        arrays[spec["name"]] = a.reshape(shape)
        crc = zlib.crc32(a.view(np.uint8).reshape(-1).data, crc)
    if crc != head["crc"] or len(keys) != len(scalars):
        raise ValueError("CRC or counts do not match")
    out = {}
    at = dict.fromkeys(arrays, 0)
    for i, (key, sc) in enumerate(zip(keys, scalars)):
        mine = {}
        for n, a in arrays.items():
            k = int(counts[n][i])
            if k < 0 or at[n] + k > len(a):
                raise ValueError("counts beyond the arrays")
            mine[n] = a[at[n] : at[n] + k]
            at[n] += k
        out[int(sc["rank"])] = (key, sc, mine)
    if any(at[n] != len(a) for n, a in arrays.items()):
        raise ValueError("counts do not add up")
    return out


def windows_cache_path(rank_file: Path, sample: int) -> Path:
    return rank_file.parent.parent / records.CACHE_DIR / f"{rank_file.stem}.rollup-s{sample}.arrow"


def windows_key(
    rank_file_key: dict[str, int],
    every: int,
    spans: np.ndarray,
    selected: list[int],
    parts: dict[int, Any] | None = None,
) -> dict[str, int]:
    """The key of one rank's cached windows: its rank file's (size, mtime, inode, cache version, step
    schema), R, the selected windows, the bytes read (every span, the tail included) and the windows
    read in part (window, head 1 / tail 2 / span 3, step records, records skipped: rollup_read.Part)."""
    sel = np.asarray(selected, dtype=np.int64)
    code = {"head": 1, "tail": 2, "span": 3}
    part = np.asarray(
        [(w, code.get(p[0], 0), p[1], p[2] if len(p) > 2 else 0) for w, p in sorted((parts or {}).items())],
        dtype=np.int64,
    )
    return rank_file_key | {
        "rollup": VERSION,
        "every": every,
        "windows": zlib.crc32(sel.tobytes()),
        "n_windows": len(sel),
        "spans": zlib.crc32(np.ascontiguousarray(spans, dtype=np.int64).tobytes()),
        "parts": zlib.crc32(part.tobytes()),
    }
