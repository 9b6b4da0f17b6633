"""The run directory as read (docs/run-format.md): manifest, rank files, and the problems met.

The names and record kinds are defined in :mod:`ddp_doctor.rundir.records`; one rank file is read by
:mod:`ddp_doctor.rundir.rankfile` (Arrow for the bulk of `step` records, a tolerant per-line path for the
rest). This module puts the ranks together and checks them against each other and the manifest.

The reader never raises on damaged or hostile data: a truncated last line, a line that is not
JSON, a wrong type, a FIFO or symlink where a file should be, duplicate steps or headers, a run
still in progress all become entries of :attr:`RunData.problems` (plain sentences; those that make
the data doubtful also in :attr:`RunData.damage`) and the rest of the data is kept. Only a
directory that is not a run at all raises :class:`RunDirError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddp_doctor.rundir import records, rollup_read
from ddp_doctor.rundir.manifests import merge_instances
from ddp_doctor.rundir.rankfile import (
    CLIP_COLUMNS,
    Problems,
    RankData,
    StepColumns,
    cache,
    cacheable,
    compact,
    key_of,
    load_cache,
    num,
    parse_rank,
    read_rank,
    read_regular,
    save_cache,
)
from ddp_doctor.rundir.records import (
    CACHE_DIR,
    MANIFEST,
    RANK_SCHEMA,
    RANKS_DIR,
    RUN_SCHEMA,
    TRAINER_DIR,
    manifest_path,
    rank_file,
)
from ddp_doctor.rundir.rollup_read import RollupView
from ddp_doctor.rundir.teardown import EXITS_SUBDIR, ExitStatus, attempt_notes, launcher_failures

__all__ = [
    "CACHE_DIR",
    "CLIP_COLUMNS",
    "MANIFEST",
    "RANKS_DIR",
    "RANK_SCHEMA",
    "RUN_SCHEMA",
    "TRAINER_DIR",
    "RankData",
    "RunData",
    "RunDirError",
    "StepColumns",
    "manifest_path",
    "num",
    "rank_file",
    "read_run",
]

# Rank files are parsed in parallel processes (one per core) above this many bytes in total;
# below it the process start-up costs more than it saves.
PARALLEL_MIN_BYTES = 32 * 2**20
MAX_MANIFEST_BYTES = 16 * 2**20
MAX_METRICS_BYTES = 256 * 2**20
# A world size beyond this is damage, not a job (no number from the data sizes an allocation).
MAX_WORLD_SIZE = 1 << 20


class RunDirError(Exception):
    """The path is not a readable run directory (missing, empty, or no manifest and no rank files)."""


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
    # the problems that make data doubtful (not merely partial): verdicts are downgraded on them
    damage: list[str] = field(default_factory=list)
    # how the run ended, when its source says so without a run directory on disk (an imported
    # log, rundir/sources/logs.py); None: judged from the directory (teardown.classify_run)
    exit_status: ExitStatus | None = None
    # who stopped the job and why (WATCH_STOP, written by `ddp-doctor watch --stop-on`); None if nobody
    stopped: dict[str, Any] | None = None
    # read by the rollup path (rundir/rollup_read.py): what the rollups say of the whole run and which
    # windows the step columns hold; None when every step was read raw
    rollups: RollupView | None = None

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


def _parse(item: tuple[Path, int, bool]) -> tuple[int, RankData | None, Problems]:
    """Parse one rank file (in a worker process); when its cache could be written, return no data:
    the parent reads the cache instead of unpickling the columns (much cheaper)."""
    path, rank, use_cache = item
    key = key_of(path)
    data, probs = parse_rank(path, rank)
    if use_cache and cacheable(key) and key_of(path) == key and save_cache(path, data, probs, key):  # type: ignore[arg-type]
        return rank, None, probs
    return rank, data, probs


def _read_all(named: list[tuple[Path, int]], use_cache: bool = True) -> list[tuple[int, RankData, Problems]]:
    """Every rank file: from its column cache when unchanged since it was parsed, else parsed —
    in worker processes (one per core) when there is enough new data to pay for them."""
    done: list[tuple[int, RankData, Problems]] = []
    todo: list[tuple[Path, int, bool]] = []
    keys = {rank: key_of(path) for path, rank in named}
    # a small run is parsed faster than a cache is checked; a big one is cached rank by rank
    use_cache = use_cache and sum(k["size"] for k in keys.values() if k) >= cache.CACHE_MIN_BYTES
    total = 0
    for path, rank in named:
        key = keys[rank]
        hit = load_cache(path, rank, key) if use_cache and cacheable(key) else None  # type: ignore[arg-type]
        if hit is not None:
            done.append((rank, hit[0], hit[1]))
        else:
            todo.append((path, rank, use_cache))
            total += key["size"] if key else 0
    workers = min(len(todo), os.cpu_count() or 1)
    if workers > 1 and total > PARALLEL_MIN_BYTES:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            parsed = list(pool.map(_parse, todo, chunksize=max(1, len(todo) // (workers * 8))))
        paths = {rank: path for path, rank, _ in todo}
        for rank, data, probs in parsed:
            if data is None:
                hit = load_cache(paths[rank], rank, key_of(paths[rank]))  # type: ignore[arg-type]
                data, probs = hit if hit is not None else read_rank(paths[rank], rank, use_cache=False)
            elif data.steps is not None:  # unpickled: constant columns arrive full-size
                compact(data.steps)
            done.append((rank, data, probs))
    else:
        done.extend((rank, *read_rank(path, rank, use_cache)) for path, rank, _ in todo)
    return sorted(done, key=lambda x: x[0])


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _rank_files(path: Path, probs: Problems) -> list[tuple[Path, int]]:
    """(file, rank) of every rank file; names that are not rank files, non-regular files and a
    second name for one rank are reported and skipped."""
    ranks_dir = path / RANKS_DIR
    if not _is_dir(ranks_dir):
        if os.path.lexists(ranks_dir):
            probs.add(f"{RANKS_DIR}/ is not a directory; no rank file read")
        return []
    found: dict[int, Path] = {}
    try:
        entries = sorted(os.scandir(ranks_dir), key=lambda e: e.name)
    except OSError as exc:
        probs.add(f"{RANKS_DIR}/ cannot be listed ({exc.strerror}); no rank file read")
        return []
    for e in entries:
        rank = records.rank_of_file_name(e.name)
        if rank is None:
            if e.name.startswith("rank-"):
                probs.add(f"{_shown(e.name)}: not a rank file name (rank-NNNNN.jsonl); ignored")
            continue
        try:
            regular = e.is_file(follow_symlinks=False)
        except OSError:
            regular = False
        if not regular:
            probs.add(f"{_shown(e.name)}: not a regular file (a symlink, FIFO or directory); ignored")
            continue
        if rank in found:
            canonical = records.rank_file_name(rank)
            keep, drop = (e.name, found[rank].name) if e.name == canonical else (found[rank].name, e.name)
            probs.add(f"rank {rank} has two files ({keep}, {_shown(drop)}); {_shown(drop)} ignored")
            found[rank] = ranks_dir / keep
            continue
        found[rank] = ranks_dir / e.name
    return sorted(((p, r) for r, p in found.items()), key=lambda x: x[1])


def rank_files(path: Path, probs: Problems) -> list[tuple[Path, int]]:
    """(file, rank) of every rank file of the run directory ``path``, in rank order (see _rank_files)."""
    return _rank_files(path, probs)


def _shown(name: str) -> str:
    return repr(name[:80]) if not name.isprintable() else name[:80]


def _read_manifest(path: Path, probs: Problems) -> tuple[dict[str, Any], bool]:
    mpath = manifest_path(path)
    if not os.path.lexists(mpath):  # several `ddp-doctor run` instances (nodes, Slurm tasks)?
        notes: list[str] = []
        merged = merge_instances(path, notes)
        for note in notes:
            probs.add(note)
        if merged is None:
            return {}, False
        return records.sanitize_fields(merged, records.MANIFEST_FIELDS, "manifest", []), True
    try:
        raw = read_regular(mpath, MAX_MANIFEST_BYTES + 1)
        if len(raw) > MAX_MANIFEST_BYTES:
            raise ValueError(f"larger than {MAX_MANIFEST_BYTES} bytes")
        manifest = json.loads(raw)
        if not isinstance(manifest, dict):
            raise ValueError("not an object")
    except (OSError, ValueError, RecursionError) as exc:
        reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)[:200]
        probs.add(f"{MANIFEST} is not readable JSON ({reason}); using the rank files alone")
        return {}, True
    bad: list[str] = []
    manifest = records.sanitize_fields(manifest, records.MANIFEST_FIELDS, "manifest", bad)
    if records.depth_exceeds(manifest, records.MAX_DEPTH):
        bad.append("manifest (nested too deep)")
        manifest = {k: v for k, v in manifest.items() if not isinstance(v, (dict, list))}
    if isinstance(manifest.get("env"), dict):
        manifest["env"] = {
            str(k): str(v) for k, v in manifest["env"].items() if isinstance(v, (str, int, float))
        }
    if bad:
        probs.add(f"{MANIFEST}: field(s) with the wrong type ignored: {', '.join(bad[:8])}")
    return manifest, True


# How `report` reads the rank files (``--rollups``): "auto" takes the rollup path for a run of at
# least rollup_read.ROLLUP_MIN_BYTES whose rank files have a rollup index; "on" always (computing
# the rollups of ranks without an index); "off" reads every step raw.
ROLLUP_MODES = ("auto", "on", "off")


def read_run(
    run_dir: Path | str,
    use_cache: bool = True,
    ranks: tuple[int, int] | None = None,
    rollups: str = "auto",
    steps: tuple[tuple[int, int], ...] = (),
    sample: int = rollup_read.SAMPLE_WINDOWS,
) -> RunData:
    """Read a run directory; raise :class:`RunDirError` only when it is not a run at all.

    ``ranks`` (A, B): read only the rank files of ranks A..B (the others are missing ranks: the
    problems say so, and ``world_size`` stays the run's). ``rollups`` (:data:`ROLLUP_MODES`) and
    ``steps`` (step ranges read raw on the rollup path): docs/report.md, "Rollups and scale"."""
    path = Path(run_dir)
    probs = Problems()
    manifest, has_manifest, named = layout(path, probs)
    n_files = len(named)
    if ranks is not None:
        named = [(p, r) for p, r in named if ranks[0] <= r <= ranks[1]]
    if _use_rollups(path, named, rollups):
        parsed, view = rollup_read.read_ranks(path, named, steps, sample)
        run = assemble(path, manifest, has_manifest, n_files, parsed, probs)
        for note in view.notes:
            run.problems.append(note)
        run.rollups = view
        return run
    return assemble(path, manifest, has_manifest, n_files, _read_all(named, use_cache), probs)


def _use_rollups(path: Path, named: list[tuple[Path, int]], mode: str) -> bool:
    if mode == "off" or not named:
        return False
    if mode == "on":
        return True
    total = 0
    for p, _ in named:
        with contextlib.suppress(OSError):
            total += os.stat(p, follow_symlinks=False).st_size
    return total >= rollup_read.ROLLUP_MIN_BYTES and rollup_read.has_index(path, [r for _, r in named])


def layout(path: Path, probs: Problems) -> tuple[dict[str, Any], bool, list[tuple[Path, int]]]:
    """The manifest (merged from the instances' when there are several), whether there is one,
    and the (file, rank) of every rank file; RunDirError when ``path`` is not a run directory."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        raise RunDirError(f"{path}: no such directory") from None
    except OSError as exc:  # a folder on the way we may not enter
        raise RunDirError(f"{path}: cannot access ({exc.strerror or exc})") from None
    if not _is_dir(path):
        raise RunDirError(f"{path}: not a directory (expected a run directory written by `ddp-doctor run`)")
    manifest, has_manifest = _read_manifest(path, probs)
    named = _rank_files(path, probs)
    if not has_manifest and not named:
        raise RunDirError(
            f"{path}: not a ddp-doctor run directory (no {MANIFEST} and no "
            f"{RANKS_DIR}/rank-*.jsonl); create one with `ddp-doctor run -- CMD`"
        )
    return manifest, has_manifest, named


def assemble(
    path: Path,
    manifest: dict[str, Any],
    has_manifest: bool,
    n_files: int,
    parsed: list[tuple[int, RankData, Problems]],
    probs: Problems,
) -> RunData:
    """The run from its manifest and its parsed rank files (read whole here, or piece by piece
    by ddp_doctor.watch): the checks of the ranks against each other and the manifest."""
    if not has_manifest:
        probs.add(f"{MANIFEST} is missing; using the rank files alone", damage=False)
    claimed = manifest.get("ranks")  # rank files present when the command ended
    if isinstance(claimed, int) and not isinstance(claimed, bool) and not 0 <= claimed <= n_files:
        probs.add(f"{MANIFEST} says {claimed} rank file(s) were written; {n_files} found")
    if manifest:
        problem = records.schema_problem(manifest.get("schema", RUN_SCHEMA), RUN_SCHEMA)
        if problem:
            probs.add(f"{MANIFEST}: {problem}")
    ranks: dict[int, RankData] = {}
    for rank, data, rank_probs in parsed:
        ranks[rank] = data
        probs.all.extend(rank_probs.all)
        probs.damage.extend(rank_probs.damage)
    if not ranks:
        raise RunDirError(
            f"{path}: no rank data ({RANKS_DIR}/rank-*.jsonl is empty or missing) — "
            "did the training command start and import torch?"
        )
    world_size = _world_size(manifest, ranks, probs)
    _check_ranks(manifest, ranks, world_size, probs)
    beyond = [r for r in ranks if r >= world_size]
    if beyond:
        probs.add(
            f"rank file(s) for rank(s) {_ranges(beyond)} beyond the world size {world_size}; "
            "they are not part of this run and are ignored"
        )
        for r in beyond:
            del ranks[r]
    missing = [r for r in range(world_size) if r not in ranks]
    if missing:
        probs.add(
            f"rank file(s) missing for rank(s) {_ranges(missing)} of world size "
            f"{world_size}: per-rank checks use the {len(ranks)} present"
        )
    if all(r.steps is None or len(r.steps) == 0 for r in ranks.values()):
        probs.add("no optimizer step was recorded yet", damage=False)
    in_progress = "end" not in manifest
    if in_progress:
        probs.add(
            "manifest has no end time: the run is still in progress or its launcher "
            "was killed; the report covers the steps recorded so far",
            damage=False,
        )
    for note in attempt_notes(path):  # torchrun --max-restarts: the last attempt is diagnosed
        probs.add(note, damage=False)
    write_errors = manifest.get("write_errors")  # `ddp-doctor run` could not write everything
    for note in write_errors[:8] if isinstance(write_errors, list) else ():
        probs.add(f"while recording: {str(note)[:300]}", damage=False)
    _check_ends(manifest, ranks, in_progress, probs)
    notes: list[str] = []
    launcher_failures(path / EXITS_SUBDIR, notes)
    for note in notes:
        probs.add(note)
    trainer_metrics = _read_trainer_metrics(records.trainer_metrics_path(path), probs)
    stopped = _read_stop(path / records.WATCH_STOP, probs)
    return RunData(
        path=path,
        manifest=manifest,
        ranks=ranks,
        world_size=world_size,
        problems=probs.all,
        in_progress=in_progress,
        trainer_metrics=trainer_metrics,
        stopped=stopped,
        damage=probs.damage,
    )


def _world_size(manifest: dict[str, Any], ranks: dict[int, RankData], probs: Problems) -> int:
    """From the rank headers, else the manifest's WORLD_SIZE, else the highest rank + 1; a claim
    beyond MAX_WORLD_SIZE or below the ranks present is reported and not believed."""
    sizes = {
        r.header["world_size"]
        for r in ranks.values()
        if r.header and isinstance(r.header.get("world_size"), int) and r.header["world_size"] > 0
    }
    nonpositive = sorted(
        rank
        for rank, r in ranks.items()
        if r.header and isinstance(r.header.get("world_size"), int) and r.header["world_size"] <= 0
    )
    if nonpositive:
        probs.add(f"rank header(s) of rank(s) {_ranges(nonpositive)}: world_size below 1; not believed")
    if len(sizes) > 1:
        probs.add(f"rank headers disagree on world_size: {sorted(sizes)[:8]}")
    env: dict[str, Any] = manifest["env"] if isinstance(manifest.get("env"), dict) else {}
    env_ws = str(env.get("WORLD_SIZE", ""))
    claimed = max(sizes) if sizes else int(env_ws) if env_ws.isdigit() and len(env_ws) < 10 else 0
    lowest = max(ranks) + 1
    if claimed > MAX_WORLD_SIZE:
        probs.add(
            f"implausible world size {claimed} (over {MAX_WORLD_SIZE}); using {lowest} (highest rank + 1)"
        )
        return lowest
    return claimed if claimed > 0 else lowest


def _check_ranks(
    manifest: dict[str, Any], ranks: dict[int, RankData], world_size: int, probs: Problems
) -> None:
    for rank, data in sorted(ranks.items()):
        h = data.header
        if not h:
            continue
        if "rank" in h and h["rank"] != rank:
            probs.add(f"rank {rank}: its header says rank {h['rank']!r}; the file name is used")
        if "schema" in h:
            problem = records.schema_problem(h["schema"], RANK_SCHEMA)
            if problem:
                probs.add(f"rank {rank}: {problem}")


def _last_step(steps: StepColumns | None) -> int | None:
    return int(steps.step.max()) if steps is not None and len(steps) else None


def _check_ends(
    manifest: dict[str, Any], ranks: dict[int, RankData], in_progress: bool, probs: Problems
) -> None:
    """A finished command whose ranks lack their `end` record stopped early (killed or crashed)."""
    if in_progress:
        return
    no_end = sorted(r for r, d in ranks.items() if d.end is None)
    if not no_end:
        return
    code = manifest.get("exit_code")
    last = {r: _last_step(ranks[r].steps) for r in no_end}
    shown = ", ".join(f"rank {r} (last step {last[r]})" for r in no_end[:8]) + (
        " …" if len(no_end) > 8 else ""
    )
    probs.add(
        f"{len(no_end)} rank(s) have no end record although the command finished (exit code {code}): "
        f"{shown} — "
        + (
            "the disk filled up (see above)"  # the launcher's write_errors
            if manifest.get("write_errors")
            else "killed or crashed before exiting"
        )
        + "; their last steps may be missing",
        damage=code not in (0, None),
    )


def _read_stop(path: Path, probs: Problems) -> dict[str, Any] | None:
    """The watcher's stop record: who stopped the job, when, and for which finding (docs/watch.md)."""
    if not os.path.lexists(path):
        return None
    try:
        rec = json.loads(read_regular(path, MAX_MANIFEST_BYTES))
    except (OSError, ValueError, RecursionError) as exc:
        probs.add(f"{path.name}: unreadable ({str(exc)[:120]}); who stopped the job is unknown", damage=False)
        return None
    if not isinstance(rec, dict) or records.depth_exceeds(rec, records.MAX_DEPTH):
        probs.add(f"{path.name}: not a JSON object; who stopped the job is unknown", damage=False)
        return None
    return rec


def _read_trainer_metrics(path: Path, probs: Problems) -> list[dict[str, Any]]:
    if not os.path.lexists(path):
        return []
    try:
        raw = read_regular(path, MAX_METRICS_BYTES)
    except OSError as exc:
        probs.add(f"{TRAINER_DIR}/{path.name}: cannot read ({exc}); ignored")
        return []
    out, bad = [], 0
    for line in raw.split(b"\n"):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            bad += bool(line.strip())
            continue
        if isinstance(rec, dict) and not records.depth_exceeds(rec, records.MAX_DEPTH):
            out.append(rec)
        else:
            bad += 1
    if bad:
        probs.add(f"{TRAINER_DIR}/{path.name}: {bad} line(s) that are not JSON objects skipped", damage=False)
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
