"""Rollups: the sufficient statistics of every window of R optimizer steps of one rank (`rollup` record).

One definition, used by the probe (probe/instruments/rollup.py: fed the `step` records as they are
written) and by `ddp-doctor summarize` (fed the same records read back from a rank file): both give
the same rollups, bit for bit, because they see the same values in the same order.

A window is the steps ``[w·R, (w+1)·R)``. For each series of :data:`SERIES` (one number per step,
taken from the step record by :func:`step_values`) a rollup holds a :data:`STAT` list

    [n, n_nonfinite, Σx, Σx², min, max, first_nonfinite_step, last_nonfinite_step]

over the steps where the value was recorded (nulls are not counted; Σ, Σx², min and max are of the
finite values); counts, min and max merge exactly, sums to float rounding (:func:`merge_stat`).
``spikes`` screens each series of :data:`SPIKE_SERIES` with the trailing-window rule of
analysis/quantities/spikes.py (its window, z, rise, history and early-loss factor from the catalog;
the baseline is recomputed every step, not every 5): [count, first step, last step]. It marks the
windows whose raw records the report must read; the verdict stays the raw rule's.
``inputs``: the count and a digest (BLAKE2b-64 of the ordered input hashes of the window, per
micro-step) of the input hashes the data-order check compares across ranks: two ranks that read the
same batches in a window have the same digest.
``shape``: ``[distinct, digest]`` of the discrete structure of the window's step records
(:func:`shape_of`: micro-step count, sync pattern, zero_grad/scheduler/unscale counts, clip call
settings, which fields were recorded): ``distinct`` is the number of different structures among
the window's steps (counted up to :data:`MAX_SHAPES`, then ``MAX_SHAPES + 1``), ``digest`` is the
first step's. A window with one structure, the same as its neighbours', holds steps that every
count-based rule (scheduler per micro-step, zero_grad inside accumulation, the sync pattern, clip
before unscale) judges exactly as it judges the steps around it: the report reads such windows from
their rollup, and reads every other window raw (docs/report.md, "Rollups and scale").

Nothing here imports torch or numpy (the probe imports it inside training processes).
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ddp_doctor.core.catalog import limit

# Chosen by measurement (docs/report.md, "Rollups and scale"): a rollup record of a probed run is
# ~1.9 KB, a step record ~0.5-1.8 KB, so R=100 adds ~1-4 % to a rank file and cuts what the bulk
# of the report reads 50-100x.
DEFAULT_EVERY = 100
SCHEMA = "ddp-doctor.rollup/1"

# series name -> what it is (docs/run-format.md, `rollup`)
SERIES: dict[str, str] = {
    "loss": "Σ of the micro-step losses (the backward root; the local loss the series module builds)",
    "loss_fn": "mean of the micro-steps' loss-function outputs",
    "gsq_local": "grad_sq_local of the last micro-step",
    "gsq_global": "grad_sq_global of the last micro-step",
    "samples": "Σ samples over micro-steps",
    "tokens": "Σ tokens over micro-steps",
    "micro_steps": "micro_steps",
    "dt": "dt",
    "lr": "lr of param group 0",
    "scale": "GradScaler scale",
    "skipped": "1 where the step was skipped",
    "found_inf": "1 where the scaler found inf",
    "nonfinite": "1 where the record names a non-finite loss or gradient",
    "zero_grad": "zero_grad",
    "zero_grad_after_backward": "zero_grad_after_backward",
    "sched_steps": "sched_steps",
    "unscale_calls": "unscale_calls",
    "clip_total_norm": "total_norm of the step's first clip call",
    "grad_norm": "grad_norm (DeepSpeed)",
    "grad_digest": "grad_digest",
    "grad_dot_step": "grad_dot_step",
    "grad_dot_local": "grad_dot_local",
}
SPIKE_SERIES = ("loss", "gsq_global")
MAX_SHAPES = 8
# step fields whose presence (recorded or not) is part of a step's structure
_PRESENCE = (
    "losses",
    "loss_fn",
    "samples",
    "tokens",
    "input_hashes",
    "sync",
    "grad_sq_local",
    "grad_sq_global",
    "lr",
    "scale",
    "grad_norm",
    "grad_digest",
    "grad_dot_step",
    "grad_dot_local",
    "zero_grad_after_backward",
)
_CLIP_SHAPE = ("max_norm", "after_unscale", "scaler", "norm_type", "clip_value")
_SCALARS = (
    "micro_steps",
    "dt",
    "scale",
    "zero_grad",
    "zero_grad_after_backward",
    "sched_steps",
    "unscale_calls",
    "grad_norm",
    "grad_digest",
    "grad_dot_step",
    "grad_dot_local",
)
# STAT indices
N, BAD, SUM, SUMSQ, MIN, MAX, FIRST_BAD, LAST_BAD = range(8)

SPIKE_WINDOW = int(limit("loss-spike", "window"))
SPIKE_Z = limit("loss-spike", "z")
MIN_REL_RISE = limit("loss-spike", "rise")
MIN_HISTORY = int(limit("loss-spike", "min_history"))
EARLY_LOSS_FACTOR = limit("loss-spike", "early_factor")
MAD_TO_STD = 1.4826


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _nums(v: Any) -> list[float]:
    return [x for x in (_num(e) for e in v) if x is not None] if isinstance(v, list) else []


def _last(v: Any) -> float | None:
    return _num(v[-1]) if isinstance(v, list) and v else None


def step_values(rec: dict[str, Any]) -> dict[str, float | None]:
    """One value per series of :data:`SERIES` from one `step` record (None: not recorded)."""
    out: dict[str, float | None] = {k: _num(rec.get(k)) for k in _SCALARS}
    losses = rec.get("losses")
    vals = _nums(losses)
    out["loss"] = math.fsum(vals) if vals and isinstance(losses, list) and len(vals) == len(losses) else None
    fn = [
        x
        for x in (_num(e.get("value")) for e in rec.get("loss_fn") or () if isinstance(e, dict))
        if x is not None
    ]
    out["loss_fn"] = math.fsum(fn) / len(fn) if fn else None
    out["gsq_local"] = _last(rec.get("grad_sq_local"))
    out["gsq_global"] = _last(rec.get("grad_sq_global"))
    samples, tokens = _nums(rec.get("samples")), _nums(rec.get("tokens"))
    out["samples"] = math.fsum(samples) if samples else None
    out["tokens"] = math.fsum(tokens) if tokens else None
    lr = rec.get("lr")
    out["lr"] = _num(lr[0]) if isinstance(lr, list) and lr else None
    out["skipped"] = _num(rec.get("skipped"))
    out["found_inf"] = _num(rec.get("found_inf"))
    out["nonfinite"] = 1.0 if isinstance(rec.get("nonfinite"), dict) else 0.0
    clip = rec.get("clip")
    out["clip_total_norm"] = _num(clip[0].get("total_norm")) if clip and isinstance(clip[0], dict) else None
    return out


def shape_of(rec: dict[str, Any]) -> bytes:
    """The discrete structure of one `step` record, as bytes: what the count-based rules read
    (micro-steps, the sync pattern, zero_grad / scheduler / unscale counts, autocast, the loss
    functions' reductions, clip call settings) and which fields were recorded at all. Two steps with
    the same structure are judged alike by every rule that does not read a continuous value."""
    fn = rec.get("loss_fn")
    clip = rec.get("clip")
    parts = (
        rec.get("micro_steps"),
        rec.get("sync"),
        rec.get("zero_grad"),
        rec.get("zero_grad_after_backward"),
        rec.get("sched_steps"),
        rec.get("unscale_calls"),
        rec.get("autocast"),
        [e.get("reduction") if isinstance(e, dict) else None for e in fn] if isinstance(fn, list) else None,
        [[e.get(k) for k in _CLIP_SHAPE] if isinstance(e, dict) else None for e in clip]
        if isinstance(clip, list)
        else None,
        len(rec["lr"]) if isinstance(rec.get("lr"), list) else None,
        "".join("1" if rec.get(k) is not None else "0" for k in _PRESENCE),
    )
    return repr(_plain(parts)).encode()


def _plain(v: Any) -> Any:
    """Numbers as floats (the probe holds ``1``, the reader reads ``1.0`` back), lists as tuples."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    return repr(type(v))


def new_stat() -> list[Any]:
    return [0, 0, 0.0, 0.0, None, None, None, None]


def add(stat: list[Any], x: float, step: int) -> None:
    stat[N] += 1
    if not math.isfinite(x):
        stat[BAD] += 1
        stat[FIRST_BAD] = step if stat[FIRST_BAD] is None else stat[FIRST_BAD]
        stat[LAST_BAD] = step
        return
    stat[SUM] += x
    stat[SUMSQ] += x * x
    stat[MIN] = x if stat[MIN] is None or x < stat[MIN] else stat[MIN]
    stat[MAX] = x if stat[MAX] is None or x > stat[MAX] else stat[MAX]


def _opt(a: Any, b: Any, pick: Any) -> Any:
    return b if a is None else a if b is None else pick(a, b)


def _flt(v: Any) -> Any:
    """A number read back from JSON: the writer's "nan"/"inf"/"-inf" strings as floats."""
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(v, v) if isinstance(v, str) else v


def merge_stat(a: list[Any], b: list[Any]) -> list[Any]:
    """Two STATs as one (of the union of their steps, or of two ranks)."""
    a, b = [_flt(v) for v in a], [_flt(v) for v in b]
    return [
        a[N] + b[N],
        a[BAD] + b[BAD],
        a[SUM] + b[SUM],
        a[SUMSQ] + b[SUMSQ],
        _opt(a[MIN], b[MIN], min),
        _opt(a[MAX], b[MAX], max),
        _opt(a[FIRST_BAD], b[FIRST_BAD], min),
        _opt(a[LAST_BAD], b[LAST_BAD], max),
    ]


def merge_marks(a: list[Any], b: list[Any]) -> list[Any]:
    """[count, first, last] of spike marks, merged."""
    return [a[0] + b[0], _opt(a[1], b[1], min), _opt(a[2], b[2], max)]


class _SpikeScreen:
    """The trailing-window spike rule over one series (bounded: SPIKE_WINDOW values)."""

    def __init__(self, early: bool) -> None:
        self.history: deque[float] = deque(maxlen=SPIKE_WINDOW)
        self.early = early

    def is_spike(self, x: float) -> bool:
        if not math.isfinite(x):
            return False
        h = self.history
        spike = False
        if len(h) >= MIN_HISTORY:
            ordered = sorted(h)
            med = _median(ordered)
            mad = _median(sorted(abs(v - med) for v in ordered))
            rise = x - med
            z = rise / (MAD_TO_STD * mad) if mad > 0 else (math.inf if rise > 0 else 0.0)
            spike = z > SPIKE_Z and med != 0 and rise / abs(med) > MIN_REL_RISE
        elif self.early and h:
            mean = math.fsum(h) / len(h)
            spike = mean > 0 and x > EARLY_LOSS_FACTOR * mean
        h.append(x)
        return spike


def _median(ordered: list[float]) -> float:
    n = len(ordered)
    return ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])


@dataclass
class RollupAccumulator:
    """Feed `step` records in step order; get a `rollup` record (a dict) each time a window closes."""

    rank: int
    every: int = DEFAULT_EVERY
    window: int | None = None
    first: int | None = None
    last: int | None = None
    steps: int = 0
    stats: dict[str, list[Any]] = field(default_factory=dict)
    spikes: dict[str, list[Any]] = field(default_factory=dict)
    _digest: Any = None
    _inputs: int = 0
    _shapes: set[bytes] = field(default_factory=set)
    _first_shape: bytes | None = None
    _screens: dict[str, _SpikeScreen] = field(default_factory=dict)
    _last_step: int = -1

    def feed(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        """Add one step record; returns the rollups of the windows it closed (at a window's last
        step; an open window also when a later window's step comes first). Steps out of
        order (a repeated step after a restart) are skipped: the reader keeps the first one too."""
        step = rec.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step <= self._last_step:
            return []
        self._last_step = step
        done = []
        w = step // self.every
        if self.window is not None and w != self.window:
            done.append(self.flush())
        if self.window is None:
            self.window, self.first = w, step
        self.last = step
        self.steps += 1
        for name, x in step_values(rec).items():
            if x is None:
                continue
            add(self.stats.setdefault(name, new_stat()), x, step)
            if name in SPIKE_SERIES:
                screen = self._screens.setdefault(name, _SpikeScreen(early=name == "loss"))
                if screen.is_spike(x):
                    self.spikes[name] = merge_marks(self.spikes.get(name, [0, None, None]), [1, step, step])
        shape = shape_of(rec)
        if self._first_shape is None:
            self._first_shape = shape
        if len(self._shapes) <= MAX_SHAPES:
            self._shapes.add(shape)
        hashes = rec.get("input_hashes")
        if isinstance(hashes, list):
            for i, h in enumerate(hashes):
                if isinstance(h, str):
                    if self._digest is None:
                        self._digest = hashlib.blake2b(digest_size=8)
                    self._digest.update(f"{step}.{i}:{h};".encode())
                    self._inputs += 1
        if (step + 1) % self.every == 0:  # the window's last step: written at once, not at the next
            done.append(self.flush())
        return [d for d in done if d is not None]

    def flush(self) -> dict[str, Any] | None:
        """The rollup of the open window (None when empty); the next window starts empty."""
        if self.window is None:
            return None
        rec = {
            "kind": "rollup",
            "schema": SCHEMA,
            "rank": self.rank,
            "every": self.every,
            "window": self.window,
            "first": self.first,
            "last": self.last,
            "steps": self.steps,
            "stats": self.stats,
            "spikes": self.spikes,
            "inputs": [self._inputs, self._digest.hexdigest() if self._digest is not None else None],
            "shape": [
                len(self._shapes),
                hashlib.blake2b(self._first_shape or b"", digest_size=8).hexdigest(),
            ],
        }
        self.window = self.first = self.last = None
        self.steps, self.stats, self.spikes = 0, {}, {}
        self._digest, self._inputs = None, 0
        self._shapes, self._first_shape = set(), None
        return rec


# --- merging rollups (the reduce) --------------------------------------------------------------


def empty_summary(every: int) -> dict[str, Any]:
    """A summary of no ranks: `windows` keyed by str(window index), `ranks` per rank totals."""
    return {"schema": SCHEMA, "every": every, "ranks": {}, "windows": {}, "problems": []}


def _merge_part(into: dict[str, Any], part: dict[str, Any]) -> None:
    """Merge one rollup-like dict (steps, first, last, stats, spikes) into ``into``."""
    into["steps"] = into.get("steps", 0) + int(part.get("steps") or 0)
    into["first"] = _opt(into.get("first"), part.get("first"), min)
    into["last"] = _opt(into.get("last"), part.get("last"), max)
    for key, merge, empty in (
        ("stats", merge_stat, new_stat),
        ("spikes", merge_marks, lambda: [0, None, None]),
    ):
        target = into.setdefault(key, {})
        for name, value in (part.get(key) or {}).items():
            target[name] = merge(target.get(name) or empty(), value)


# A window's `digests` counts the ranks per input digest for the MAX_DIGESTS most shared digests;
# the ranks with any other digest are counted in `digests_other`. So a window of a 16k-rank run stays
# small (sharded data: one digest per rank), and what the data-order checks ask of it — how many
# ranks read the same batches — is exact whenever at most MAX_DIGESTS digests are shared by more
# than one rank (a missing DistributedSampler: one digest for all ranks).
MAX_DIGESTS = 8


def _count_digests(win: dict[str, Any], add: dict[str, int], other: int = 0) -> None:
    counts = win.setdefault("digests", {})
    for d, c in add.items():
        counts[d] = counts.get(d, 0) + int(c)
    other += int(win.get("digests_other") or 0)
    if len(counts) > MAX_DIGESTS:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        other += sum(c for _, c in ranked[MAX_DIGESTS:])
        win["digests"] = dict(ranked[:MAX_DIGESTS])
    if other:
        win["digests_other"] = other


def add_rollup(summary: dict[str, Any], rec: dict[str, Any]) -> None:
    """Fold one rank's rollup record into a summary (window-wise over ranks, and per rank)."""
    rank, window = str(rec["rank"]), str(rec["window"])
    win = summary["windows"].setdefault(window, {"ranks": 0, "digests": {}})
    win["ranks"] += 1
    _merge_part(win, rec)
    count, digest = (rec.get("inputs") or [0, None])[:2]
    if digest is not None:
        _count_digests(win, {digest: 1})
    win["inputs"] = win.get("inputs", 0) + int(count or 0)
    _merge_part(summary["ranks"].setdefault(rank, {}), rec)


def merge_summaries(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The summaries of disjoint rank sets (one per node) as one: the reduce."""
    every = {p.get("every") for p in parts}
    if len(every) > 1:
        raise ValueError(f"summaries of different windows cannot be merged: R = {sorted(map(str, every))}")
    out = empty_summary(parts[0]["every"] if parts else DEFAULT_EVERY)
    for p in parts:
        out["problems"].extend(p.get("problems", []))
        for rank, totals in p["ranks"].items():
            if rank in out["ranks"]:
                out["problems"].append(f"rank {rank} is in more than one summary; counted once")
                continue
            out["ranks"][rank] = totals
        for window, win in p["windows"].items():
            target = out["windows"].setdefault(window, {"ranks": 0, "digests": {}, "inputs": 0})
            target["ranks"] += win["ranks"]
            target["inputs"] += win.get("inputs", 0)
            _count_digests(target, win.get("digests", {}), int(win.get("digests_other") or 0))
            _merge_part(target, win)
    out["windows"] = dict(sorted(out["windows"].items(), key=lambda kv: int(kv[0])))
    out["ranks"] = dict(sorted(out["ranks"].items(), key=lambda kv: int(kv[0])))
    return out


def mean_std(stat: list[Any]) -> tuple[float, float]:
    """Mean and (population) standard deviation of the finite values of a STAT (nan when none)."""
    n = stat[N] - stat[BAD]
    if n <= 0:
        return math.nan, math.nan
    mean = stat[SUM] / n
    return mean, math.sqrt(max(stat[SUMSQ] / n - mean * mean, 0.0))
