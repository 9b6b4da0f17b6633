"""The run-directory layout (docs/run-format.md): names shared by writer and reader, and the reader.

The probe writes with these names; the analysis reads with them. Nothing here imports torch.

The reader never raises on damaged data: a truncated last line, a line that is not JSON, a missing
rank file, a non-finite number written as a string or a run still in progress all become entries
of :attr:`RunData.problems` (plain sentences) and the rest of the data is kept. Only a directory
that is not a run at all raises :class:`RunDirError`.

Speed: a rank file is read in one go and each line decoded with ``json.loads``; per-step values are
appended to flat lists (per-micro-step lists concatenated, with offsets) and turned into numpy
arrays once, so the analysis works on columns, never on 10^5 dicts (bench/report.py measures it).
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

RUN_SCHEMA = "ddp-doctor.run/1"
CLIP_COLUMNS = ("max_norm", "total_norm", "after_unscale", "scaler")  # of a step record's `clip` entries
RANK_SCHEMA = "ddp-doctor.rank/1"
MANIFEST = "manifest.json"
RANKS_DIR = "ranks"
TRAINER_DIR = "trainer"
KNOWN_MAJOR = "1"
# At most this many damaged lines are listed one by one per rank; the rest are counted.
MAX_LISTED_BAD_LINES = 5
# Rank files are parsed in parallel processes (one per core) above this many bytes in total;
# below it the process start-up costs more than it saves.
PARALLEL_MIN_BYTES = 32 * 2**20

# Parsed columns of rank files of at least this size are cached in RUN/.ddp-doctor-cache/ keyed by
# (size, mtime); a finished run is then parsed once, and a running one again only when it grew.
CACHE_DIR = ".ddp-doctor-cache"
CACHE_MIN_BYTES = 4 * 2**20
CACHE_VERSION = 3

try:  # optional (`pip install ddp-doctor[fast]`): decodes JSON several times faster
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - exercised when orjson is absent
    _loads = json.loads


def rank_file(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / RANKS_DIR / f"rank-{rank:05d}.jsonl"


def manifest_path(run_dir: Path) -> Path:
    return Path(run_dir) / MANIFEST


class RunDirError(Exception):
    """The path is not a readable run directory (missing, empty, or no manifest and no rank files)."""


def num(value: Any) -> float:
    """A recorded number as a float: ``"nan"``/``"inf"``/``"-inf"`` strings and null become floats."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


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
    clip: np.ndarray  # [calls, 4]: CLIP_COLUMNS; flags as 1/0, nan where not recorded
    nonfinite: list[tuple[int, dict[str, Any]]]
    autocast: set[str]

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

    def config(self, what: str) -> dict[str, Any] | None:
        """The last `config` record of this kind (later records describe the current state)."""
        for rec in reversed(self.configs):
            if rec.get("what") == what:
                return rec
        return None


@dataclass
class RunData:
    """A run directory as read: manifest, ranks, and the problems met while reading."""

    path: Path
    manifest: dict[str, Any]
    ranks: dict[int, RankData]
    world_size: int
    problems: list[str]
    in_progress: bool
    trainer_metrics: list[dict[str, Any]] = field(default_factory=list)

    def config(self, what: str) -> dict[str, Any] | None:
        """A config record of this kind from the lowest rank that has one."""
        for rank in sorted(self.ranks):
            rec = self.ranks[rank].config(what)
            if rec is not None:
                return rec
        return None

    @property
    def missing_ranks(self) -> list[int]:
        return [r for r in range(self.world_size) if r not in self.ranks]


class _StepBuilder:
    """Collects `step` records, then turns them into columns with one comprehension per field.

    Building columns field by field (instead of appending per record) keeps the Python work per
    record small; numpy converts None and the "nan"/"inf" strings itself. A record whose per-micro
    lists do not have ``micro_steps`` entries is padded/cut for that field only.
    """

    def __init__(self) -> None:
        self.recs: list[dict[str, Any]] = []

    def add(self, rec: dict[str, Any]) -> None:
        self.recs.append(rec)

    def _micro(self, key: str, micro: list[int], total: int, conv: Any, dtype: Any) -> np.ndarray:
        lists = [r.get(key) or () for r in self.recs]
        flat = [x for lst in lists for x in lst]
        if len(flat) != total or [len(lst) for lst in lists] != micro:
            flat = [x for r, m in zip(self.recs, micro) for x in _fit(r.get(key) or [], m, conv)]
        try:
            return np.asarray(flat, dtype=dtype)
        except (TypeError, ValueError):
            return np.asarray([conv(x) for x in flat], dtype=dtype)

    def build(self) -> StepColumns:
        recs = self.recs
        micro_l = [int(r.get("micro_steps", len(r.get("losses") or ()))) for r in recs]
        micro = np.asarray(micro_l, dtype=np.int64)
        offsets = np.zeros(micro.shape[0] + 1, dtype=np.int64)
        np.cumsum(micro, out=offsets[1:])
        total = int(offsets[-1])
        f64 = np.float64

        def col(key: str, default: Any, dtype: Any) -> np.ndarray:
            vals = [r.get(key, default) for r in recs]
            try:
                return np.asarray(vals, dtype=dtype)
            except (TypeError, ValueError):
                conv = num if dtype is f64 else (lambda v: _int_or(v, default))
                return np.asarray([conv(v) for v in vals], dtype=dtype)

        fns = self._micro("loss_fn", micro_l, total, lambda x: x, object)
        fn_ok = [isinstance(f, dict) for f in fns]
        calls = [(r.get("step", -1), c) for r in recs for c in (r.get("clip") or ()) if isinstance(c, dict)]
        clip_rows = [[c.get(k) for k in CLIP_COLUMNS] for _, c in calls]
        nonfinite = [(int(r.get("step", -1)), r["nonfinite"]) for r in recs if r.get("nonfinite")]
        lr = [(r.get("lr") or [None])[0] for r in recs]
        return StepColumns(
            step=col("step", -1, np.int64),
            micro_steps=micro,
            offsets=offsets,
            time=col("time", None, f64),
            zero_grad=np.asarray([_int_or(r.get("zero_grad"), -1) for r in recs], dtype=np.int64),
            sched_steps=np.asarray([_int_or(r.get("sched_steps"), -1) for r in recs], dtype=np.int64),
            lr=np.asarray([num(x) for x in lr], dtype=f64),
            skipped=np.asarray([bool(r.get("skipped")) for r in recs], dtype=bool),
            scale=col("scale", None, f64),
            found_inf=np.asarray([bool(r.get("found_inf")) for r in recs], dtype=bool),
            unscale_calls=np.asarray([_int_or(r.get("unscale_calls"), 0) for r in recs], dtype=np.int64),
            losses=self._micro("losses", micro_l, total, num, f64),
            fn_value=_floats([f.get("value") if ok else None for f, ok in zip(fns, fn_ok)]),
            fn_sum=np.asarray([ok and f.get("reduction") == "sum" for f, ok in zip(fns, fn_ok)], dtype=bool),
            fn_n_valid=_floats([f.get("n_valid") if ok else None for f, ok in zip(fns, fn_ok)]),
            samples=self._micro("samples", micro_l, total, num, f64),
            tokens=self._micro("tokens", micro_l, total, num, f64),
            sync=np.nan_to_num(self._micro("sync", micro_l, total, num, f64)).astype(np.int64),
            grad_sq_local=self._micro("grad_sq_local", micro_l, total, num, f64),
            grad_sq_global=self._micro("grad_sq_global", micro_l, total, num, f64),
            input_hashes=np.array(
                [
                    h.encode("ascii", "replace") if isinstance(h, str) else b""
                    for h in self._micro("input_hashes", micro_l, total, lambda x: x, object)
                ],
                dtype="S",
            ),
            clip_step=np.asarray([st for st, _ in calls], dtype=np.int64),
            clip=_floats(clip_rows).reshape(len(calls), len(CLIP_COLUMNS)),
            nonfinite=nonfinite,
            autocast={str(r["autocast"]) for r in recs if r.get("autocast")},
        )


def _floats(values: list[Any]) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        if values and isinstance(values[0], list):
            return np.asarray([[num(v) for v in row] for row in values], dtype=np.float64)
        return np.asarray([num(v) for v in values], dtype=np.float64)


def _int_or(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _fit(values: list[Any], length: int, conv: Any) -> list[Any]:
    """``values`` converted and padded/cut to ``length`` so per-micro arrays stay aligned."""
    out = [conv(v) for v in values[:length]]
    if len(out) < length:
        out.extend([conv(None)] * (length - len(out)))
    return out


_KEEP = {"sampler", "replica", "full", "compile_check", "unused"}


def read_rank_file(path: Path, rank: int, problems: list[str]) -> RankData:
    """Read one rank file, appending a sentence to ``problems`` for each kind of damage."""
    data = RankData(rank=rank)
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    if tail.strip():
        problems.append(
            f"rank {rank}: last line is truncated (no newline; {len(tail)} bytes "
            "ignored) — the run was killed or is still writing"
        )
    builder = _StepBuilder()
    bad: list[int] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = _loads(line)
        except ValueError:  # orjson.JSONDecodeError subclasses ValueError
            bad.append(lineno)
            continue
        if not isinstance(rec, dict):
            bad.append(lineno)
            continue
        kind = rec.get("kind")
        if kind == "step":
            if isinstance(rec.get("step"), int) and isinstance(rec.get("micro_steps", 0), int):
                builder.add(rec)
            else:
                bad.append(lineno)
        elif kind == "config":
            data.configs.append(rec)
        elif kind in _KEEP:
            getattr(data, kind).append(rec)
        elif kind == "header":
            data.header = rec
            schema = str(rec.get("schema", RANK_SCHEMA))
            if not schema.endswith(f"/{KNOWN_MAJOR}") and "/" + KNOWN_MAJOR + "." not in schema:
                problems.append(f"rank {rank}: unknown rank schema {schema!r}; read as {RANK_SCHEMA}")
        elif kind == "probe_error":
            data.probe_errors.append(rec)
        elif kind == "end":
            data.end = rec
        else:
            data.unknown_kinds += 1
    if bad:
        listed = ", ".join(str(n) for n in bad[:MAX_LISTED_BAD_LINES])
        more = f" and {len(bad) - MAX_LISTED_BAD_LINES} more" if len(bad) > MAX_LISTED_BAD_LINES else ""
        problems.append(
            f"rank {rank}: {len(bad)} corrupt line(s) skipped (not a JSON record): line {listed}{more}"
        )
    if data.header is None:
        problems.append(f"rank {rank}: no header record")
    data.steps = builder.build()
    for err in data.probe_errors:
        problems.append(
            f"rank {rank}: probe instrument {err.get('instrument')!r} failed at step "
            f"{err.get('step')} and was disabled: {err.get('error')}"
        )
    return data


def _cache_path(path: Path) -> Path:
    return path.parent.parent / CACHE_DIR / (path.stem + ".npz")


def _cache_key(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "version": CACHE_VERSION}


_ARRAYS = (
    "step",
    "micro_steps",
    "offsets",
    "time",
    "zero_grad",
    "sched_steps",
    "lr",
    "skipped",
    "scale",
    "found_inf",
    "unscale_calls",
    "losses",
    "fn_value",
    "fn_sum",
    "fn_n_valid",
    "samples",
    "tokens",
    "sync",
    "grad_sq_local",
    "grad_sq_global",
)
_LISTS = ("configs", "sampler", "replica", "full", "compile_check", "unused", "probe_errors")


def _save_cache(path: Path, data: RankData, problems: list[str], key: dict[str, int]) -> None:
    """Columns as .npz (no pickle: a run directory may come from someone else), records as JSON."""
    c = data.steps
    meta = {
        "key": key,
        "problems": problems,
        "header": data.header,
        "end": data.end,
        "unknown_kinds": data.unknown_kinds,
        "nonfinite": c.nonfinite,
        "autocast": sorted(c.autocast),
        **{k: getattr(data, k) for k in _LISTS},
    }
    out = _cache_path(path)
    try:
        out.parent.mkdir(exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}.npz")
        np.savez(
            tmp,
            meta=np.array(json.dumps(meta)),
            input_hashes=c.input_hashes,
            clip_step=c.clip_step,
            clip=c.clip,
            **{k: getattr(c, k) for k in _ARRAYS},
        )
        os.replace(tmp, out)
    except OSError:  # a read-only run directory: no cache, no problem
        pass


def _load_cache(path: Path, rank: int, key: dict[str, int]) -> tuple[RankData, list[str]] | None:
    cached = _cache_path(path)
    if not cached.exists():
        return None
    try:
        with np.load(cached, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta["key"] != key:
                return None
            cols = {k: z[k] for k in _ARRAYS}
            hashes = z["input_hashes"]
            clip_step, clip = z["clip_step"], z["clip"]
    except (OSError, ValueError, KeyError):
        return None
    steps = StepColumns(
        **cols,
        input_hashes=hashes,
        clip_step=clip_step,
        clip=clip,
        nonfinite=[tuple(x) for x in meta["nonfinite"]],
        autocast=set(meta["autocast"]),
    )
    data = RankData(
        rank=rank,
        header=meta["header"],
        steps=steps,
        end=meta["end"],
        unknown_kinds=meta["unknown_kinds"],
        **{k: meta[k] for k in _LISTS},
    )
    return data, meta["problems"]


def _parse(item: tuple[Path, int, dict[str, int]]) -> tuple[int, RankData, list[str]]:
    path, rank, key = item
    problems: list[str] = []
    data = read_rank_file(path, rank, problems)
    if key["size"] >= CACHE_MIN_BYTES and _cache_key(path) == key:  # unchanged while we read it
        _save_cache(path, data, problems, key)
    return rank, data, problems


def _read_all(named: list[tuple[Path, int]]) -> list[tuple[int, RankData, list[str]]]:
    """Every rank file: from the column cache when unchanged since it was parsed, else parsed —
    in worker processes (one per core) when there is enough new data to pay for them."""
    done: list[tuple[int, RankData, list[str]]] = []
    todo: list[tuple[Path, int, dict[str, int]]] = []
    for path, rank in named:
        key = _cache_key(path)
        hit = _load_cache(path, rank, key) if key["size"] >= CACHE_MIN_BYTES else None
        if hit is not None:
            done.append((rank, hit[0], hit[1]))
        else:
            todo.append((path, rank, key))
    workers = min(len(todo), os.cpu_count() or 1)
    if workers > 1 and sum(k["size"] for _, _, k in todo) > PARALLEL_MIN_BYTES:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done.extend(pool.map(_parse, todo))
    else:
        done.extend(_parse(item) for item in todo)
    return sorted(done, key=lambda x: x[0])


def read_run(run_dir: Path | str) -> RunData:
    """Read a run directory; raise :class:`RunDirError` only when it is not a run at all."""
    path = Path(run_dir)
    if not path.exists():
        raise RunDirError(f"{path}: no such directory")
    if not path.is_dir():
        raise RunDirError(f"{path}: not a directory (expected a run directory written by `ddp-doctor run`)")
    problems: list[str] = []
    manifest: dict[str, Any] = {}
    mpath = manifest_path(path)
    if mpath.exists():
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError("not an object")
        except (ValueError, UnicodeDecodeError) as exc:
            problems.append(f"manifest.json is not valid JSON ({exc}); using the rank files alone")
            manifest = {}
    files = sorted((path / RANKS_DIR).glob("rank-*.jsonl")) if (path / RANKS_DIR).is_dir() else []
    if not mpath.exists() and not files:
        raise RunDirError(
            f"{path}: not a ddp-doctor run directory (no {MANIFEST} and no "
            f"{RANKS_DIR}/rank-*.jsonl); create one with `ddp-doctor run -- CMD`"
        )
    if not mpath.exists():
        problems.append("manifest.json is missing; using the rank files alone")
    schema = str(manifest.get("schema", RUN_SCHEMA))
    if manifest and not schema.startswith("ddp-doctor.run/" + KNOWN_MAJOR):
        problems.append(f"unknown run schema {schema!r}; read as {RUN_SCHEMA}")
    named: list[tuple[Path, int]] = []
    for f in files:
        try:
            named.append((f, int(f.stem.split("-", 1)[1])))
        except ValueError:
            problems.append(f"{f.name}: not a rank file name (rank-NNNNN.jsonl); ignored")
    ranks: dict[int, RankData] = {}
    for rank, data, rank_problems in _read_all(named):
        ranks[rank] = data
        problems.extend(rank_problems)
    if not ranks:
        raise RunDirError(
            f"{path}: no rank data ({RANKS_DIR}/rank-*.jsonl is empty or missing) — "
            "did the training command start and import torch?"
        )
    sizes = {
        int(r.header["world_size"])
        for r in ranks.values()
        if r.header and isinstance(r.header.get("world_size"), int)
    }
    env_ws = manifest.get("env", {}).get("WORLD_SIZE") if isinstance(manifest.get("env"), dict) else None
    world_size = max(sizes) if sizes else int(env_ws) if str(env_ws or "").isdigit() else max(ranks) + 1
    if len(sizes) > 1:
        problems.append(f"rank headers disagree on world_size: {sorted(sizes)}")
    missing = [r for r in range(world_size) if r not in ranks]
    if missing:
        problems.append(
            f"rank file(s) missing for rank(s) {_ranges(missing)} of world size "
            f"{world_size}: per-rank checks use the {len(ranks)} present"
        )
    if all(len(r.steps) == 0 for r in ranks.values()):
        problems.append("no optimizer step was recorded yet")
    in_progress = "end" not in manifest
    if in_progress:
        problems.append(
            "manifest has no end time: the run is still in progress or its launcher "
            "was killed; the report covers the steps recorded so far"
        )
    trainer_metrics = _read_trainer_metrics(path / TRAINER_DIR / "metrics.jsonl")
    return RunData(
        path=path,
        manifest=manifest,
        ranks=ranks,
        world_size=world_size,
        problems=problems,
        in_progress=in_progress,
        trainer_metrics=trainer_metrics,
    )


def _read_trainer_metrics(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().split(b"\n"):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _ranges(values: list[int]) -> str:
    """``[0, 1, 2, 5]`` → ``"0-2, 5"``."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ", ".join(parts)
