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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

RUN_SCHEMA = "ddp-doctor.run/1"
RANK_SCHEMA = "ddp-doctor.rank/1"
MANIFEST = "manifest.json"
RANKS_DIR = "ranks"
TRAINER_DIR = "trainer"
KNOWN_MAJOR = "1"
# At most this many damaged lines are listed one by one per rank; the rest are counted.
MAX_LISTED_BAD_LINES = 5


def rank_file(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / RANKS_DIR / f"rank-{rank:05d}.jsonl"


def manifest_path(run_dir: Path) -> Path:
    return Path(run_dir) / MANIFEST


class RunDirError(Exception):
    """The path is not a readable run directory (missing, empty, or no manifest and no rank files)."""


def num(value: Any) -> float:
    """A recorded number as a float: ``"nan"``/``"inf"``/``"-inf"`` strings and null become floats."""
    if value is None:
        return math.nan
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return float(value)


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
    input_hashes: list[str | None]
    # sparse per-step facts: (step, value)
    clips: list[tuple[int, dict[str, Any]]]
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
    """Accumulates `step` records into flat lists (cheap appends), then numpy arrays."""

    def __init__(self) -> None:
        self.per_step: dict[str, list[Any]] = {k: [] for k in (
            "step", "micro_steps", "time", "zero_grad", "sched_steps", "lr", "skipped", "scale",
            "found_inf", "unscale_calls")}
        self.per_micro: dict[str, list[Any]] = {k: [] for k in (
            "losses", "fn_value", "fn_sum", "fn_n_valid", "samples", "tokens", "sync",
            "grad_sq_local", "grad_sq_global")}
        self.hashes: list[str | None] = []
        self.clips: list[tuple[int, dict[str, Any]]] = []
        self.nonfinite: list[tuple[int, dict[str, Any]]] = []
        self.autocast: set[str] = set()

    def add(self, rec: dict[str, Any]) -> None:
        ps, pm = self.per_step, self.per_micro
        step = int(rec.get("step", -1))
        losses = rec.get("losses") or []
        m = int(rec.get("micro_steps", len(losses)))
        ps["step"].append(step)
        ps["micro_steps"].append(m)
        ps["time"].append(num(rec.get("time")))
        ps["zero_grad"].append(_int_or(rec.get("zero_grad"), -1))
        ps["sched_steps"].append(_int_or(rec.get("sched_steps"), -1))
        lr = rec.get("lr")
        ps["lr"].append(num(lr[0]) if lr else math.nan)
        ps["skipped"].append(bool(rec.get("skipped", False)))
        ps["scale"].append(num(rec.get("scale")))
        ps["found_inf"].append(bool(rec.get("found_inf", False)))
        ps["unscale_calls"].append(_int_or(rec.get("unscale_calls"), 0))
        pm["losses"].extend(_fit(losses, m, num))
        fns = _fit(rec.get("loss_fn") or [], m, lambda x: x)
        pm["fn_value"].extend(num(f.get("value")) if isinstance(f, dict) else math.nan for f in fns)
        pm["fn_sum"].extend(isinstance(f, dict) and f.get("reduction") == "sum" for f in fns)
        pm["fn_n_valid"].extend(num(f.get("n_valid")) if isinstance(f, dict) else math.nan
                                for f in fns)
        pm["samples"].extend(_fit(rec.get("samples") or [], m, num))
        pm["tokens"].extend(_fit(rec.get("tokens") or [], m, num))
        pm["sync"].extend(_fit(rec.get("sync") or [], m, lambda x: _int_or(x, 0)))
        pm["grad_sq_local"].extend(_fit(rec.get("grad_sq_local") or [], m, num))
        pm["grad_sq_global"].extend(_fit(rec.get("grad_sq_global") or [], m, num))
        self.hashes.extend(_fit(rec.get("input_hashes") or [], m, lambda x: x))
        for clip in rec.get("clip") or ():
            self.clips.append((step, clip))
        if rec.get("nonfinite"):
            self.nonfinite.append((step, rec["nonfinite"]))
        if rec.get("autocast"):
            self.autocast.add(str(rec["autocast"]))

    def build(self) -> StepColumns:
        ps, pm = self.per_step, self.per_micro
        micro = np.asarray(ps["micro_steps"], dtype=np.int64)
        offsets = np.zeros(micro.shape[0] + 1, dtype=np.int64)
        np.cumsum(micro, out=offsets[1:])
        f64 = np.float64
        return StepColumns(
            step=np.asarray(ps["step"], dtype=np.int64), micro_steps=micro, offsets=offsets,
            time=np.asarray(ps["time"], dtype=f64),
            zero_grad=np.asarray(ps["zero_grad"], dtype=np.int64),
            sched_steps=np.asarray(ps["sched_steps"], dtype=np.int64),
            lr=np.asarray(ps["lr"], dtype=f64), skipped=np.asarray(ps["skipped"], dtype=bool),
            scale=np.asarray(ps["scale"], dtype=f64),
            found_inf=np.asarray(ps["found_inf"], dtype=bool),
            unscale_calls=np.asarray(ps["unscale_calls"], dtype=np.int64),
            losses=np.asarray(pm["losses"], dtype=f64), fn_value=np.asarray(pm["fn_value"], dtype=f64),
            fn_sum=np.asarray(pm["fn_sum"], dtype=bool),
            fn_n_valid=np.asarray(pm["fn_n_valid"], dtype=f64),
            samples=np.asarray(pm["samples"], dtype=f64), tokens=np.asarray(pm["tokens"], dtype=f64),
            sync=np.asarray(pm["sync"], dtype=np.int64),
            grad_sq_local=np.asarray(pm["grad_sq_local"], dtype=f64),
            grad_sq_global=np.asarray(pm["grad_sq_global"], dtype=f64),
            input_hashes=self.hashes, clips=self.clips, nonfinite=self.nonfinite,
            autocast=self.autocast)


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
        problems.append(f"rank {rank}: last line is truncated (no newline; {len(tail)} bytes "
                        "ignored) — the run was killed or is still writing")
    builder = _StepBuilder()
    bad: list[int] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            bad.append(lineno)
            continue
        if not isinstance(rec, dict):
            bad.append(lineno)
            continue
        kind = rec.get("kind")
        if kind == "step":
            try:
                builder.add(rec)
            except (TypeError, ValueError, AttributeError):
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
        problems.append(f"rank {rank}: {len(bad)} corrupt line(s) skipped (not a JSON record): "
                        f"line {listed}{more}")
    if data.header is None:
        problems.append(f"rank {rank}: no header record")
    data.steps = builder.build()
    for err in data.probe_errors:
        problems.append(f"rank {rank}: probe instrument {err.get('instrument')!r} failed at step "
                        f"{err.get('step')} and was disabled: {err.get('error')}")
    return data


def read_run(run_dir: Path | str) -> RunData:
    """Read a run directory; raise :class:`RunDirError` only when it is not a run at all."""
    path = Path(run_dir)
    if not path.exists():
        raise RunDirError(f"{path}: no such directory")
    if not path.is_dir():
        raise RunDirError(f"{path}: not a directory (expected a run directory written by "
                          "`ddp-doctor run`)")
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
        raise RunDirError(f"{path}: not a ddp-doctor run directory (no {MANIFEST} and no "
                          f"{RANKS_DIR}/rank-*.jsonl); create one with `ddp-doctor run -- CMD`")
    if not mpath.exists():
        problems.append("manifest.json is missing; using the rank files alone")
    schema = str(manifest.get("schema", RUN_SCHEMA))
    if manifest and not schema.startswith("ddp-doctor.run/" + KNOWN_MAJOR):
        problems.append(f"unknown run schema {schema!r}; read as {RUN_SCHEMA}")
    ranks: dict[int, RankData] = {}
    for f in files:
        try:
            rank = int(f.stem.split("-", 1)[1])
        except ValueError:
            problems.append(f"{f.name}: not a rank file name (rank-NNNNN.jsonl); ignored")
            continue
        ranks[rank] = read_rank_file(f, rank, problems)
    if not ranks:
        raise RunDirError(f"{path}: no rank data ({RANKS_DIR}/rank-*.jsonl is empty or missing) — "
                          "did the training command start and import torch?")
    sizes = {int(r.header["world_size"]) for r in ranks.values()
             if r.header and isinstance(r.header.get("world_size"), int)}
    env_ws = manifest.get("env", {}).get("WORLD_SIZE") if isinstance(manifest.get("env"), dict) else None
    world_size = max(sizes) if sizes else int(env_ws) if str(env_ws or "").isdigit() else max(ranks) + 1
    if len(sizes) > 1:
        problems.append(f"rank headers disagree on world_size: {sorted(sizes)}")
    missing = [r for r in range(world_size) if r not in ranks]
    if missing:
        problems.append(f"rank file(s) missing for rank(s) {_ranges(missing)} of world size "
                        f"{world_size}: per-rank checks use the {len(ranks)} present")
    if all(len(r.steps) == 0 for r in ranks.values()):
        problems.append("no optimizer step was recorded yet")
    in_progress = "end" not in manifest
    if in_progress:
        problems.append("manifest has no end time: the run is still in progress or its launcher "
                        "was killed; the report covers the steps recorded so far")
    trainer_metrics = _read_trainer_metrics(path / TRAINER_DIR / "metrics.jsonl")
    return RunData(path=path, manifest=manifest, ranks=ranks, world_size=world_size,
                   problems=problems, in_progress=in_progress, trainer_metrics=trainer_metrics)


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
