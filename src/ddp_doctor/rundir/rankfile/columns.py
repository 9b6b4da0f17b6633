"""One rank file's data as the analysis reads it, and the Arrow step table turned into numpy columns.

:class:`RankData` is everything one rank file holds; its `step` records are :class:`StepColumns`
(numpy arrays, per step and per micro-step). :func:`to_columns` builds them from the validated step
table that :mod:`.scan` parses (or :mod:`.cache` reads back): nulls become nan/-1, the fast
path's stand-ins for non-finite numbers (±DBL_MAX, the double below DBL_MAX) become ±inf/nan
again, and micro-step lists are cut or padded to the record's micro-step count.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ddp_doctor.rundir import records

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
_DBL_MAX = np.finfo(np.float64).max
_NAN_MARK = float(np.nextafter(_DBL_MAX, 0))  # 1.7976931348623155e308 stands for "nan" in the fast path


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
    return to_columns_many([(table, rank, probs)])[0]


def to_columns_many(tables: list[tuple[pa.Table, int, Problems | None]]) -> list[StepColumns]:
    """:func:`to_columns` of several validated step tables ((table, rank, problems) each; the same
    columns and problems): the tables' rows converted at once and cut into each one's columns. Every
    conversion is row by row (a micro-step list by its own row), so the rows of several tables
    give each table's values; only a table's constant columns (:func:`compact`), its input hashes'
    width, its autocast set and its problems are its own. ~45 Arrow/numpy calls per conversion: on
    ~750 steps these cost more than the values (rundir/rollup_read.py: 4.2 → 1.0 ms per rank)."""
    if not tables:
        return []
    rows = np.asarray([t.num_rows for t, _, _ in tables], dtype=np.int64)
    table = tables[0][0] if len(tables) == 1 else pa.concat_tables([t for t, _, _ in tables])
    b = _Batch(table)
    at = np.zeros(len(tables) + 1, dtype=np.int64)
    np.cumsum(rows, out=at[1:])
    return [b.rank(int(at[i]), int(at[i + 1]), rank, probs) for i, (_, rank, probs) in enumerate(tables)]


class _Batch:
    """The columns of every row of a step table (one or several ranks' rows), cut by :meth:`rank`."""

    def __init__(self, table: pa.Table) -> None:  # noqa: PLR0915 - every step field converted, in one pass
        n = table.num_rows
        self.n = n
        step = _ints(table["step"], -1)
        micro_lists = [f.name for f in records.KINDS["step"] if f.per == "micro"]
        listed = {name: _list(table, name) for name in micro_lists}
        longest = (
            np.max(np.stack([ln for _, _, ln in listed.values()]), axis=0) if n else np.zeros(0, np.int64)
        )
        declared = _ints(table["micro_steps"], -1)
        # missing counts are null; a negative one is damage (counted per rank: its problems)
        self.negative = (
            np.asarray(
                pc.fill_null(pc.less(table["micro_steps"], 0), False).to_numpy(zero_copy_only=False), bool
            )
            if n
            else np.zeros(0, dtype=bool)
        )
        micro = np.where(declared < 0, longest, declared)
        self.over = micro > longest  # a count the lists do not back (micro_steps 1e9) sizes nothing
        if self.over.any():
            micro = np.where(self.over, longest, micro)
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
                pc.fill_null(pc.equal(fn_flat.field("reduction"), "sum"), False).to_numpy(
                    zero_copy_only=False
                )
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
        # each rank's hashes as wide as its own longest (what one rank alone gives)
        self.hash_len = (
            np.asarray(pc.binary_length(hashes).to_numpy(zero_copy_only=False), np.int64)
            if len(hashes)
            else np.zeros(0, np.int64)
        )
        self.hash_at = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(h_len, out=self.hash_at[1:])
        input_hashes = _align(hashes_np, h_len, micro, offsets, b"")
        sync = np.nan_to_num(fl("sync")).astype(np.int64)
        lr_flat, lr_start, lr_len = _list(table, "lr")
        lr_all = _floats(lr_flat)
        lr = np.where(
            lr_len > 0,
            lr_all[np.minimum(lr_start, max(len(lr_all) - 1, 0))] if len(lr_all) else np.nan,
            np.nan,
        )
        clip_flat, _, clip_len = _list(table, "clip")
        clip = np.zeros((len(clip_flat), len(CLIP_COLUMNS)))
        clip_ok = np.asarray(clip_flat.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        for j, name in enumerate(CLIP_COLUMNS):
            clip[:, j] = _floats(pc.cast(clip_flat.field(name), pa.float64()))
        self.clip_rows = np.repeat(step, clip_len)[clip_ok].astype(np.int64)
        self.clip = clip[clip_ok]
        # where each row's kept clip entries start among the kept ones
        clip_at = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(clip_len, out=clip_at[1:])
        kept = np.zeros(len(clip_ok) + 1, dtype=np.int64)
        np.cumsum(clip_ok, out=kept[1:])
        self.clip_at = kept[clip_at]
        nf = table["nonfinite"]
        self.nonfinite: list[tuple[int, int, dict[str, Any]]] = []  # (row, step, record)
        if nf.null_count < n:
            mask = pc.is_valid(nf)
            where = np.flatnonzero(np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)).tolist()
            for r, s, rec in zip(
                where, pc.filter(table["step"], mask).to_pylist(), pc.filter(nf, mask).to_pylist()
            ):
                self.nonfinite.append((r, int(s), rec))
        ac = table["autocast"].combine_chunks()
        self.autocast: list[tuple[int, str]] = []  # (row, value) of the rows that have one
        if ac.null_count < n:
            valid = np.flatnonzero(np.asarray(ac.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
            self.autocast = list(zip(valid.tolist(), ac.take(pa.array(valid)).to_pylist()))
        self.extra: dict[str, tuple[bool, np.ndarray]] = {}  # name -> (per micro-step, values)
        for f in records.KINDS["step"]:
            if f.name in _STEP_ATTRS or f.name not in table.column_names:
                continue
            if f.type in ("int", "float", "bool"):
                self.extra[f.name] = (False, _floats(table[f.name].combine_chunks()))
            elif f.type in ("list[float]", "list[int]") and f.per == "micro":
                self.extra[f.name] = (True, fl(f.name))
        self.offsets = offsets
        self.per_step = {
            "step": step,
            "micro_steps": micro.astype(np.int64),
            "time": _floats(table["time"].combine_chunks()),
            "zero_grad": _ints(table["zero_grad"], -1),
            "sched_steps": _ints(table["sched_steps"], -1),
            "lr": np.asarray(lr, dtype=np.float64),
            "skipped": _bools(table["skipped"].combine_chunks()),
            "scale": _floats(table["scale"].combine_chunks()),
            "found_inf": _bools(table["found_inf"].combine_chunks()),
            "unscale_calls": _ints(table["unscale_calls"], 0),
        }
        self.per_micro = {
            "losses": fl("losses"),
            "loss_nonfinite": _align(
                _recorded_nonfinite(listed["losses"][0]), listed["losses"][2], micro, offsets, False
            ).astype(bool),
            "fn_value": fn_value,
            "fn_sum": np.asarray(fn_sum, dtype=bool),
            "fn_n_valid": fn_n,
            "samples": fl("samples"),
            "tokens": fl("tokens"),
            "sync": sync,
            "grad_sq_local": fl("grad_sq_local"),
            "grad_sq_global": fl("grad_sq_global"),
            "input_hashes": input_hashes,
        }

    def rank(self, a: int, b: int, rank: int, probs: Problems | None) -> StepColumns:
        """The columns of rows [a, b) (one rank's table), with that rank's problems."""
        negative = int(self.negative[a:b].sum())
        if negative and probs is not None:
            probs.add(
                f"rank {rank}: {negative} step record(s) with a negative micro_steps; their lists' length used"
            )
        over = int(self.over[a:b].sum())
        if over and probs is not None:
            probs.add(f"rank {rank}: {over} step record(s) claim more micro-steps than their lists hold")
        whole = a == 0 and b == self.n
        m0, m1 = int(self.offsets[a]), int(self.offsets[b])
        per_micro = {k: v[m0:m1] for k, v in self.per_micro.items()}
        h0, h1 = int(self.hash_at[a]), int(self.hash_at[b])
        width = max(int(self.hash_len[h0:h1].max()), 1) if h1 > h0 else 1
        hashes = per_micro["input_hashes"]
        if hashes.dtype.itemsize != width:
            per_micro["input_hashes"] = hashes.astype(f"S{width}")
        c0, c1 = int(self.clip_at[a]), int(self.clip_at[b])
        return compact(
            StepColumns(
                **{k: v[a:b] for k, v in self.per_step.items()},
                offsets=self.offsets if whole else self.offsets[a : b + 1] - m0,
                **per_micro,
                clip_step=self.clip_rows[c0:c1],
                clip=self.clip[c0:c1],
                nonfinite=[(s, rec) for r, s, rec in self.nonfinite if a <= r < b],
                autocast={str(v) for r, v in self.autocast if a <= r < b},
                extra={k: v[m0:m1] if micro else v[a:b] for k, (micro, v) in self.extra.items()},
            )
        )


# A column whose entries are all the same bytes (a field the run never recorded: all nan, -1 or
# False; or one that never changed: micro_steps, samples) is held as a read-only broadcast view of
# its one value: no memory per step. Typical runs have 8-12 of the ~25 columns constant (no
# scaler, no loss-function record, one micro-step count): ~20-40 % of a rank's columns. The
# analysis treats StepColumns as read-only already (the cache's arrays are views of a read-only
# buffer), and a view reads exactly like the full array (bit for bit: compared as bytes, so
# -0.0 and 0.0, or two NaN payloads, are not merged).
COMPACT_MIN = 64


def constant(a: np.ndarray) -> bool:
    """Whether ``a`` (1-D, numeric or bool) holds one value, compared byte for byte."""
    if a.ndim != 1 or len(a) < COMPACT_MIN or a.dtype.kind not in "biuf":
        return False
    if a.strides == (0,):
        return True
    bits = a.view(f"u{a.dtype.itemsize}")
    return bool((bits == bits[0]).all())


def broadcast(value: np.ndarray, n: int) -> np.ndarray:
    """A read-only length-``n`` view of the one-element array ``value``."""
    return np.broadcast_to(value[:1], (n,))


def compact(c: StepColumns) -> StepColumns:
    """``c`` with every constant column replaced by a broadcast view of its first entry."""
    for f in dataclasses.fields(c):
        a = getattr(c, f.name)
        if isinstance(a, np.ndarray) and a.strides != (0,) and constant(a):
            setattr(c, f.name, broadcast(a[:1].copy(), len(a)))
    for k, a in c.extra.items():
        if a.strides != (0,) and constant(a):
            c.extra[k] = broadcast(a[:1].copy(), len(a))
    return c


def num(value: Any) -> float:
    """A recorded number as a float: ``"nan"``/``"inf"``/``"-inf"`` strings and null become floats."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def take_steps(c: StepColumns, keep: np.ndarray) -> StepColumns:
    """The step records of ``c`` where ``keep`` (one bool per record) holds, as columns of their own
    (per-step arrays indexed, per-micro-step arrays cut along ``offsets``, clip rows and
    non-finite notes of the kept steps). The rollup path keeps only the windows it reads raw."""
    keep = np.asarray(keep, dtype=bool)
    n_micro = int(c.offsets[-1])
    micro_keep = np.repeat(keep, c.micro_steps)
    micro = c.micro_steps[keep]
    offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(micro, out=offsets[1:])
    clip_keep = np.isin(c.clip_step, c.step[keep])

    def take(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
        # a constant column stays one value: what compact() makes of a[mask] (no copy of n values)
        n = len(offsets) - 1 if mask is keep else int(offsets[-1])
        if a.ndim == 1 and a.strides == (0,) and len(a) and n >= COMPACT_MIN:
            return broadcast(a[:1].copy(), n)
        taken: np.ndarray = a[mask]
        return taken

    out: dict[str, Any] = {}
    for f in dataclasses.fields(c):
        a = getattr(c, f.name)
        if f.name == "offsets":
            out[f.name] = offsets
        elif f.name == "clip_step" or f.name == "clip":
            out[f.name] = a[clip_keep]
        elif f.name == "nonfinite":
            kept_steps = set(c.step[keep].tolist()) if a else set()
            out[f.name] = [(s, r) for s, r in a if s in kept_steps]
        elif f.name == "autocast":
            out[f.name] = set(a)
        elif f.name == "extra":
            out[f.name] = {
                k: take(v, micro_keep) if len(v) == n_micro and len(v) != len(keep) else take(v, keep)
                for k, v in a.items()
            }
        elif isinstance(a, np.ndarray) and len(a) == len(keep) and f.name not in _MICRO_ARRAYS:
            out[f.name] = take(a, keep)
        elif isinstance(a, np.ndarray):
            out[f.name] = take(a, micro_keep) if len(a) == n_micro else a
        else:
            out[f.name] = a
    return compact(StepColumns(**out))


# per micro-step arrays of StepColumns (aligned with `offsets`)
_MICRO_ARRAYS = (
    "losses",
    "loss_nonfinite",
    "fn_value",
    "fn_sum",
    "fn_n_valid",
    "samples",
    "tokens",
    "sync",
    "grad_sq_local",
    "grad_sq_global",
    "input_hashes",
)
