"""`ddp-doctor summarize`: the per-node map (rollups of some ranks) and the run-level reduce.

The map reads the raw rank files of the selected ranks, one line at a time (memory bounded by one
line and one window per rank), computes their rollups with the accumulator the probe uses
(rundir/rollups.py) and writes

* ``RUN/ranks/rollup-NNNNN.jsonl`` — the rank's rollup index (rundir/rollup_index.py: one `rollup`
  record per window with its bytes in the rank file), beside the rank file (the reader does not
  take the name for a rank file); the probe writes the same file as the run goes, and a current
  one (same R, same rank file, no step after its last window) is reused;
* ``RUN/rollups/ranks-A-B.json`` — the partial summary of ranks A..B (windows merged over those
  ranks, totals per rank): the node's output.

The reduce (``--reduce``) merges every ``RUN/rollups/ranks-*.json`` into ``RUN/rollups/summary.json``.
So a job of N nodes runs one map per node over the node's own ranks (srun/torchrun, one task per
node) and one reduce anywhere (docs/report.md, "Rollups and scale"). Every file is written through
core/safe_io (temp file + rename: a planted symlink is replaced, never followed); a ``ranks/`` or
``rollups/`` that is a symlink is refused.
"""

from __future__ import annotations

import json
import os
import stat
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from ddp_doctor.core.safe_io import PRIVATE_FILE, OutputError, open_regular, write_bytes, write_text
from ddp_doctor.rundir import records
from ddp_doctor.rundir.rankfile import Problems
from ddp_doctor.rundir.reader import rank_files
from ddp_doctor.rundir.rollup_index import header, index_path, read_index
from ddp_doctor.rundir.rollup_map import RankRollups, lines, rollups_of_file
from ddp_doctor.rundir.rollups import add_rollup, empty_summary, merge_summaries

ROLLUPS_DIR = "rollups"
SUMMARY = "summary.json"
_STEP = records.line_prefix("step")


def rollup_file(run_dir: Path | str, rank: int) -> Path:
    return index_path(run_dir, rank)


def part_name(first: int, last: int) -> str:
    return f"ranks-{first}-{last}.json"


def _reusable(run_dir: Path, path: Path, rank: int, every: int) -> RankRollups | None:
    """The rank's rollup index (the probe's, or an earlier summarize's) when it is of R=every,
    indexes this rank file, and no step record follows its last window."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    index, _ = read_index(run_dir, rank, st)
    if index is None or index.every != every:
        return None
    for _, _, line in lines(path, [], start=index.end):
        if line.startswith(_STEP):
            return None
    return RankRollups(rank, index.entries, reused=True, ino=st.st_ino)


def _map_one(item: tuple[str, str, int, int, bool]) -> RankRollups:
    run_dir, path_s, rank, every, force = item
    path = Path(path_s)
    if not force:
        cached = _reusable(Path(run_dir), path, rank, every)
        if cached is not None:
            return cached
    out = rollups_of_file(path, rank, every)
    target = rollup_file(run_dir, rank)
    if out.ino is not None:
        body = records.encode(header(rank, every, out.ino)) + b"".join(records.encode(r) for r in out.rollups)
        try:
            write_bytes(target, body, mode=PRIVATE_FILE)
        except OSError as exc:
            out.problems.append(f"{target.name} not written: {exc}")
    return out


def _real_dir(path: Path, create: bool) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise OutputError(f"{path} does not exist") from None
        path.mkdir(mode=0o700)
        return
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path} is not a directory (a symlink is not followed)")


def parse_span(text: str, flag: str = "--ranks", what: str = "rank numbers") -> tuple[int, int]:
    """``A-B`` (or ``A``) as (A, B); ValueError on anything else (``summarize --ranks``, ``report --steps``)."""
    a, sep, b = text.partition("-")
    if not a.strip().isdigit() or (sep and not b.strip().isdigit()):
        raise ValueError(f"{flag} takes A-B or A ({what}), not {text!r}")
    lo, hi = int(a), int(b) if sep else int(a)
    if hi < lo:
        raise ValueError(f"{flag} {text}: the last is before the first")
    return lo, hi


def parse_ranks(text: str | None) -> tuple[int, int] | None:
    """``A-B`` (or ``A``) as (A, B); None for all ranks. ValueError on anything else."""
    return None if text is None else parse_span(text)


def summarize(
    run_dir: Path | str,
    ranks: tuple[int, int] | None = None,
    every: int = 100,
    jobs: int = 1,
    force: bool = False,
) -> tuple[dict[str, Any], Path]:
    """The map: rollups of the selected ranks (written beside their files) and their partial summary
    (written to RUN/rollups/ranks-A-B.json). Returns (summary, path written)."""
    if every < 1:
        raise ValueError(f"--window must be >= 1, got {every}")
    run = Path(run_dir)
    _real_dir(run / records.RANKS_DIR, create=False)
    probs = Problems()
    files = [(p, r) for p, r in rank_files(run, probs) if ranks is None or ranks[0] <= r <= ranks[1]]
    summary = empty_summary(every)
    summary["problems"].extend(probs.all)
    items = [(str(run), str(p), r, every, force) for p, r in files]
    if jobs > 1 and len(items) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_map_one, items, chunksize=max(1, len(items) // (4 * jobs))))
    else:
        results = [_map_one(i) for i in items]
    for res in results:
        summary["problems"].extend(f"rank {res.rank}: {p}" for p in res.problems)
        if not res.rollups:
            summary["ranks"].setdefault(str(res.rank), {"steps": 0})
        for rec in res.rollups:
            add_rollup(summary, rec)
    summary["windows"] = dict(sorted(summary["windows"].items(), key=lambda kv: int(kv[0])))
    lo = ranks[0] if ranks else (files[0][1] if files else 0)
    hi = ranks[1] if ranks else (files[-1][1] if files else 0)
    out_dir = run / ROLLUPS_DIR
    _real_dir(out_dir, create=True)
    target = out_dir / part_name(lo, hi)
    write_text(target, json.dumps(records.jsonable(summary), allow_nan=False) + "\n", mode=PRIVATE_FILE)
    return summary, target


def reduce(run_dir: Path | str) -> tuple[dict[str, Any], Path]:
    """The reduce: every RUN/rollups/ranks-*.json merged into RUN/rollups/summary.json."""
    out_dir = Path(run_dir) / ROLLUPS_DIR
    _real_dir(out_dir, create=False)
    parts, problems = [], []
    for entry in sorted(os.scandir(out_dir), key=lambda e: e.name):
        if not (entry.name.startswith("ranks-") and entry.name.endswith(".json")):
            continue
        try:
            fd, st = open_regular(Path(entry.path))
            with os.fdopen(fd, "rb") as f:
                part = json.loads(f.read(st.st_size))
            if not isinstance(part, dict) or part.get("schema") != empty_summary(1)["schema"]:
                raise ValueError("not a rollup summary")
            parts.append(part)
        except (OSError, ValueError) as exc:
            problems.append(f"{entry.name}: {exc}; left out")
    if not parts:
        raise OutputError(f"no readable {ROLLUPS_DIR}/ranks-*.json in {run_dir}: run `summarize` first")
    try:
        merged = merge_summaries(parts)
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as exc:
        raise OutputError(f"the summaries in {out_dir} cannot be merged: {exc}") from None
    merged["problems"] = problems + merged["problems"]
    target = out_dir / SUMMARY
    write_text(target, json.dumps(records.jsonable(merged), allow_nan=False) + "\n", mode=PRIVATE_FILE)
    return merged, target
