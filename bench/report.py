"""Benchmark `ddp-doctor report` on large synthetic runs: the full raw read and the rollup path side by side.

    python bench/report.py                                   # the table of docs/report.md ("Rollups and scale")
    python bench/report.py --sizes 8x100000                  # one shape
    python bench/report.py --sizes 8x100000 --old REF        # also another commit's code (its default path)
    python bench/report.py --sizes 4096x2000 --sparse '' --old REF --paths old,rollups   # old vs new only
    python bench/report.py --sweep                           # the scaling sweep (ranks 8…1,024, steps 12.5k…100k)

Paths, in one run per shape: ``raw`` = this tree with ``--rollups off`` (every step parsed; the
column cache written cold, read warm), ``rollups`` = this tree with ``--rollups on`` (the rollup
index and the selected windows; cold = the first report with RUN/.ddp-doctor-cache/ removed, warm =
the second, from the report cache (report/cache.py) and the rollup caches; the OS page cache is not
dropped on a shared machine), ``old REF`` = another commit's code with its default flags (``--paths``
picks which run; ``--cold-only old`` skips a warm run of a path that has no cache of its own). The
warm report must equal the cold one (printed when it does not). Every run directory gets its rollup index from
`ddp-doctor summarize` (R = 100), as the probe would have written it.

The 1,024 × 100,000 row (``--sparse``) is generated *sparse*: its rank files have their full size
(~70 MB each, ~72 GB in all) but only the bytes the report reads are written — every line that is not
a step record, the windows the rollup path selects (computed with the report's own selection from
the indexes) and the tail; the rest are holes. Its indexes are the 8 × 100,000 run's, rank r from
rank r mod 8, with the byte offsets moved by the re-encoded headers. The raw path is not run on it
(it would read 72 GB of holes as data); the row says so. The bench checks that the report read no
window that was not written (the windows written: the selection with every window whole).

Run directories are written once by tests/fixtures/synth_run.py — through ddp_doctor.rundir.records,
the probe's own record check and encoder, so the bytes are what the probe writes — and reused while
their shape is unchanged (DIR/rR-sN). A run wider than 1,024 ranks is *widened* from the 1,024-rank
run of the same length (:func:`widen_run`): rank r's step lines are the bytes of rank r mod 1,024,
its header and `config` records are re-encoded with its own rank and the new world size (generating
4,096 × 2,000 from scratch takes ~45 min of CPU on this box; widening takes seconds). Its ranks
therefore share input hashes four by four — the data-order check reports that, which costs what
any data-order finding costs.

For each shape, each implementation in turn — the old code (``git archive REF src`` into
DIR/old-REF, run with PYTHONPATH pointing at it) and this tree — runs `ddp-doctor report --format
json` in a fresh process twice: cold (column cache removed: every rank file parsed, the cache
written) and warm (cache present). Printed per run: wall time, CPU time (user + sys of the report
process and its parser workers: what the report costs whatever else the machine is doing), the
peak resident memory of the whole process tree (sampled every 20 ms), and the 1-minute load
average (`uptime`) before and after. Ratios new/old are side by side on the same machine state.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

SIZES_DEFAULT = "8x100000,1024x2000,4096x2000"
SPARSE_DEFAULT = "1024x100000"
WIDEN_FROM = 1024
SPARSE_BASE = 8  # the sparse run's ranks are this run's, widened
EVERY = 100


def ensure_run(path: Path, ranks: int, steps: int, accum: int) -> Path:
    from fixtures.synth_run import SynthSpec, write_run

    shape = {"ranks": ranks, "steps": steps, "accum": accum, "writer": 2, "index": EVERY}
    marker = path / "bench-shape.json"
    if marker.exists() and json.loads(marker.read_text()) == shape:
        return path
    if path.exists():
        shutil.rmtree(path)
    t = time.perf_counter()
    if ranks > WIDEN_FROM:
        base = ensure_run(path.parent / f"r{WIDEN_FROM}-s{steps}", WIDEN_FROM, steps, accum)
        widen_run(base, path, ranks)
    else:
        write_run(
            path,
            SynthSpec(
                world_size=ranks,
                steps=steps,
                accum=accum,
                every=500,
                steps_per_epoch=1000,
                tau=steps / 5,
                faults=("loss-spike",),
            ),
        )
        index_run(path)
    marker.write_text(json.dumps(shape))
    print(f"generated {path} in {time.perf_counter() - t:.1f} s", flush=True)
    return path


def index_run(run: Path) -> None:
    """The rollup index of every rank (what the probe writes as the run goes), by `summarize`."""
    from ddp_doctor.rundir import summarize

    summarize.summarize(run, None, every=EVERY, jobs=os.cpu_count() or 1, force=True)


def _lines(path: Path) -> list[tuple[int, int, bool]]:
    """(start, end, is a step line) of every line of a rank file."""
    from ddp_doctor.rundir import records

    prefix, out, at = records.line_prefix("step"), [], 0
    with open(path, "rb") as fh:
        for line in fh:
            out.append((at, at + len(line), line.startswith(prefix)))
            at += len(line)
    return out


def _reencode(line: bytes, rank: int, ranks: int) -> bytes:
    from ddp_doctor.rundir import records

    rec = json.loads(line)
    for k, v in (("rank", rank), ("world_size", ranks), ("local_rank", rank % 8)):
        if k in rec:
            rec[k] = v
    return records.encode(records.check(rec))


class Widened:
    """Rank r of a wider run from rank (r mod base) of ``base``: its non-step lines re-encoded with
    rank r and the new world size, its step lines the same bytes, its index the base rank's with
    the byte offsets moved by the re-encoded lines."""

    def __init__(self, base: Path) -> None:
        from ddp_doctor.rundir import records

        self.base = base
        self.files = sorted((base / records.RANKS_DIR).glob("rank-*.jsonl"))
        self.lines = [_lines(p) for p in self.files]
        self.others = [[(a, b) for a, b, step in ls if not step] for ls in self.lines]
        self._entries: dict[int, list[dict[str, Any]]] = {}

    def rank(self, r: int, ranks: int) -> tuple[int, dict[int, bytes], Any, int]:
        """(base rank, new bytes of each non-step line by its base start, offset map, new size)."""
        import numpy as np

        b = r % len(self.files)
        raw = {}
        with open(self.files[b], "rb") as fh:
            for a, e in self.others[b]:
                fh.seek(a)
                raw[a] = _reencode(fh.read(e - a), r, ranks)
        starts = np.asarray([a for a, _ in self.others[b]], dtype=np.int64)
        deltas = np.cumsum([len(raw[a]) - (e - a) for a, e in self.others[b]])

        def moved(x: Any) -> Any:  # a base offset at a line boundary -> the wide file's
            i = np.searchsorted(starts, np.asarray(x), side="left")  # re-encoded lines starting before x
            return np.asarray(x) + np.where(i > 0, deltas[np.maximum(i - 1, 0)], 0)

        size = self.lines[b][-1][1] + int(deltas[-1] if len(deltas) else 0)
        return b, raw, moved, size

    def index(self, r: int, ranks: int, ino: int, moved: Any) -> bytes:
        from ddp_doctor.rundir import records, rollup_index

        b = r % len(self.files)
        if b not in self._entries:  # each base index parsed once
            with open(rollup_index.index_path(self.base, b), "rb") as fh:
                self._entries[b] = [json.loads(line) for line in list(fh)[1:]]
        out = [records.encode(rollup_index.header(r, EVERY, ino))]
        for base in self._entries[b]:
            e = dict(base, rank=r)
            e["at"] = [int(x) for x in moved(base["at"])]
            e["others"] = [[int(x) for x in moved(o)] for o in base["others"]]
            out.append(records.encode(e))
        return b"".join(out)


def widen_run(base: Path, out: Path, ranks: int, sparse: bool = False) -> None:
    """A run of ``ranks`` ranks from ``base`` (see :class:`Widened`), with its rollup index. Sparse:
    only the bytes the rollup path reads are written (module doc)."""
    from ddp_doctor.rundir import records, rollup_index

    w = Widened(base)
    (out / records.RANKS_DIR).mkdir(parents=True)
    manifest = json.loads(records.manifest_path(base).read_text())
    manifest["env"] = {**manifest.get("env", {}), "WORLD_SIZE": str(ranks)}
    manifest["ranks"] = ranks
    records.manifest_path(out).write_text(json.dumps(manifest, indent=1))
    plans = []
    for r in range(ranks):
        b, raw, moved, size = w.rank(r, ranks)
        path = records.rank_file(out, r)
        with open(path, "wb") as fh:
            if sparse:
                fh.truncate(size)  # holes, filled below where the report reads
                for a, line in raw.items():
                    fh.seek(int(moved(a)))
                    fh.write(line)
            else:
                with open(w.files[b], "rb") as src:
                    for a, e, step in w.lines[b]:
                        if step:
                            src.seek(a)
                            fh.write(src.read(e - a))
                        else:
                            fh.write(raw[a])
        rollup_index.index_path(out, r).write_bytes(w.index(r, ranks, path.stat().st_ino, moved))
        plans.append((r, b, moved))
    if sparse:
        fill_selected(out, w, plans)


def fill_selected(out: Path, w: Widened, plans: list[tuple[int, int, Any]]) -> list[int]:
    """Write the step bytes of the windows the rollup path selects (its own selection, from the
    indexes just written) and of the tail; returns those windows."""
    from ddp_doctor.rundir import records, rollup_read

    named = [(records.rank_file(out, r), r) for r, _, _ in plans]
    ok, _, notes = rollup_read._index_all(out, named, os.cpu_count() or 1)
    if notes:
        raise SystemExit(f"sparse run: unusable indexes: {notes[:2]}")
    # every selected window whole (the selection before spans by marks: a superset of the windows
    # any later selection reads), so that an older commit's report reads only bytes written too
    chosen = sorted(rollup_read.select(rollup_read.reduce(ok), by_marks=False))
    import numpy as np

    by_rank = {x.rank: x for x in ok}
    step_lines = [np.asarray([(a, e) for a, e, step in ls if step], dtype=np.int64) for ls in w.lines]
    for r, b, moved in plans:
        x = by_rank[r]
        sel = np.isin(x.window, np.asarray(chosen))
        spans = np.concatenate([x.at[sel], [[x.tail, x.size]]])
        base = step_lines[b]
        wide = np.asarray(moved(base[:, 0]), dtype=np.int64)
        i = np.searchsorted(spans[:, 0], wide, side="right") - 1
        keep = (i >= 0) & (wide < spans[np.maximum(i, 0), 1])
        base, wide = base[keep], wide[keep]
        # runs of step lines that lie back to back in both files: one read and one write each
        brk = np.flatnonzero(
            (base[1:, 0] != base[:-1, 1]) | (wide[1:] - base[1:, 0] != wide[:-1] - base[:-1, 0])
        )
        starts = np.concatenate(([0], brk + 1))
        ends = np.concatenate((brk, [len(base) - 1]))
        with open(w.files[b], "rb") as src, open(records.rank_file(out, r), "r+b") as fh:
            for a0, a1 in zip(starts.tolist(), ends.tolist()):
                if a1 < a0:
                    continue
                src.seek(int(base[a0, 0]))
                fh.seek(int(wide[a0]))
                fh.write(src.read(int(base[a1, 1] - base[a0, 0])))
    (out / "bench-selected.json").write_text(json.dumps(chosen))
    return chosen


def ensure_sparse(path: Path, ranks: int, steps: int, accum: int) -> Path:
    shape = {"ranks": ranks, "steps": steps, "accum": accum, "writer": 2, "index": EVERY, "sparse": True}
    marker = path / "bench-shape.json"
    if marker.exists() and json.loads(marker.read_text()) == shape:
        return path
    if path.exists():
        shutil.rmtree(path)
    base = ensure_run(path.parent / f"r{SPARSE_BASE}-s{steps}", SPARSE_BASE, steps, accum)
    t = time.perf_counter()
    widen_run(base, path, ranks, sparse=True)
    marker.write_text(json.dumps(shape))
    print(f"generated {path} (sparse) in {time.perf_counter() - t:.1f} s", flush=True)
    return path


@dataclass
class Timing:
    wall: float
    cpu: float
    rss_gb: float
    out: dict[str, Any]


def timed_report(run: Path, env: dict[str, str], args: list[str]) -> Timing:
    """Wall seconds, CPU seconds and peak RSS (GB, summed over the process tree) of one `report`."""
    out_file = run / ".bench-report.json"
    cmd = [
        sys.executable,
        "-m",
        "ddp_doctor.cli",
        "report",
        str(run),
        "--format",
        "json",
        "-o",
        str(out_file),
    ]
    t = time.perf_counter()
    proc = subprocess.Popen([*cmd, *args], stderr=subprocess.DEVNULL, env=env)
    peak = 0
    ps = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [ps, *ps.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"report failed with exit code {proc.returncode}")
    out = json.loads(out_file.read_text())
    out_file.unlink()
    return Timing(wall, _children_cpu(), peak / 1e9, out)


_cpu_seen = 0.0


def _children_cpu() -> float:
    """CPU seconds of the children reaped since the last call (they include their own workers)."""
    global _cpu_seen
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    delta, _cpu_seen = total - _cpu_seen, total
    return delta


def implementations(old: str | None, where: Path) -> list[tuple[str, dict[str, str], list[str]]]:
    """(name, environment, report flags): the full raw read and the rollup path of this tree, and
    optionally an old commit's src (exported once; it reads raw)."""
    out = []
    if old:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", old], check=True, capture_output=True, text=True
        ).stdout.strip()
        src = where / f"old-{commit}"
        if not (src / "src" / "ddp_doctor").is_dir():
            src.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", commit, "src"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        out.append((f"old {commit}", _env(src / "src"), []))
    out.append(("raw", _env(ROOT / "src"), ["--rollups", "off"]))
    out.append(("rollups", _env(ROOT / "src"), ["--rollups", "on"]))
    for name, env, _ in out:  # byte-compile once, so neither pays compilation inside the timing
        subprocess.run([sys.executable, "-m", "compileall", "-q", env["PYTHONPATH"]], env=env, check=False)
        probe = "import ddp_doctor, sys; print(ddp_doctor.__file__)"
        got = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout
        if not got.startswith(env["PYTHONPATH"]):
            raise SystemExit(f"{name}: ddp_doctor imported from {got.strip()}, not {env['PYTHONPATH']}")
    return out


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": str(src)}


def _verdicts(out: dict[str, Any]) -> dict[str, str]:
    return {h["id"]: h["verdict"] for h in out["hypotheses"]}


def bench(
    run: Path,
    ranks: int,
    steps: int,
    impls: list[tuple[str, dict[str, str], list[str]]],
    sparse: bool = False,
    cold_only: set[str] | None = None,
) -> list[str]:
    from ddp_doctor.rundir.records import CACHE_DIR, RANKS_DIR

    files = list((run / RANKS_DIR).glob("rank-*.jsonl"))
    size = sum(f.stat().st_size for f in files)
    index = sum(f.stat().st_size for f in (run / RANKS_DIR).glob("rollup-*.jsonl"))
    written = sum(f.stat().st_blocks * 512 for f in files) if sparse else size
    print(
        f"run: {ranks} ranks × {steps} steps, rank files {size / 1e6:.0f} MB, index {index / 1e6:.0f} MB",
        flush=True,
    )
    rows, verdicts = [], {}
    for name, env, args in impls:
        label = f"{ranks:,} × {steps:,}" + (" (sparse)" if sparse else "")
        if sparse and args == ["--rollups", "off"]:  # the raw path; an old commit's default reads the rollups
            rows.append(
                f"| {label} | {size / 1e6:,.0f} ({written / 1e6:,.0f} written) | {index / 1e6:,.0f} | {name} | "
                "not run: the rank files are sparse (only what the rollup path reads is written); a full raw "
                f"read would parse {size / 1e9:.0f} GB | | | | | | | |"
            )
            continue
        shutil.rmtree(run / CACHE_DIR, ignore_errors=True)
        _children_cpu()
        load0 = os.getloadavg()[0]
        cold = timed_report(run, env, args)
        warm = None if name.split()[0] in (cold_only or set()) else timed_report(run, env, args)
        load1 = os.getloadavg()[0]
        verdicts[name] = _verdicts(cold.out)
        if warm is not None and warm.out != cold.out:
            print(f"  {name}: the warm report differs from the cold one", flush=True)
        read = cold.out["run"].get("rollups") or {}
        if sparse:
            expected = json.loads((run / "bench-selected.json").read_text())
            got = [w for a, b in read.get("read_raw", []) for w in range(a, b + 1)]
            if not set(got) <= set(expected):  # a report may read fewer windows than were written
                raise SystemExit(
                    f"sparse run: the report read windows {sorted(set(got) - set(expected))[:20]} that "
                    f"the bench did not write (it wrote {expected[:20]}…)"
                )
        raw = f"{read['steps_read_raw']:,} / {read['steps_total']:,}" if read else "all"
        w = (
            f"{warm.wall:.2f} | {warm.cpu:.2f} | {warm.rss_gb:.2f}"
            if warm
            else "not run (no cache of its own) | |"
        )
        print(
            f"  {name}: cold {cold.wall:.1f} s (CPU {cold.cpu:.1f} s, peak RSS {cold.rss_gb:.2f} GB), "
            f"warm {w.replace(' | ', ' / ')} (s / CPU s / peak RSS GB), steps read raw {raw}, load {load0:.1f}–{load1:.1f}",
            flush=True,
        )
        rows.append(
            f"| {label} | {size / 1e6:,.0f} | {index / 1e6:,.0f} | {name} | {raw} | {cold.wall:.1f} | {cold.cpu:.1f} | "
            f"{cold.rss_gb:.2f} | {w} | {load0:.1f}–{load1:.1f} |"
        )
    if len(verdicts) > 1:
        names = list(verdicts)
        same = all(verdicts[n] == verdicts[names[0]] for n in names[1:])
        print(f"  verdicts equal across paths: {same}", flush=True)
        if not same:
            for h in verdicts[names[0]]:
                print(f"    {h}: " + ", ".join(f"{n} {verdicts[n].get(h)}" for n in names))
    shutil.rmtree(run / CACHE_DIR, ignore_errors=True)  # the next user of the directory starts cold
    return rows


# --sweep: ranks at a fixed number of steps, and steps at a fixed number of ranks
SWEEP = [(r, 2000) for r in (8, 64, 256, 1024)] + [(8, n) for n in (12_500, 25_000, 50_000, 100_000)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=SIZES_DEFAULT, help="RANKSxSTEPS,... (default %(default)s)")
    ap.add_argument("--sparse", default=SPARSE_DEFAULT, help="RANKSxSTEPS of the sparse row ('' for none)")
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-bench"))
    ap.add_argument("--old", default=None, help="also time this commit's code (full raw read)")
    ap.add_argument(
        "--paths",
        default="old,raw,rollups",
        help="which of old (needs --old), raw, rollups to time (default %(default)s; the big shapes: old,rollups)",
    )
    ap.add_argument(
        "--cold-only",
        default="",
        help="paths timed cold only (e.g. 'old': a path without a cache of its own is as slow warm)",
    )
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--sweep", action="store_true", help="the scaling sweep (runs in DIR/rR-sN)")
    args = ap.parse_args()
    shapes = (
        SWEEP if args.sweep else [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",") if s]
    )
    wanted = {p.strip() for p in args.paths.split(",") if p.strip()}
    impls = [] if args.generate_only else implementations(args.old, args.dir)
    impls = [i for i in impls if i[0].split()[0] in wanted]
    cold_only = {p.strip() for p in args.cold_only.split(",") if p.strip()}
    rows = []
    print(f"load before generating {os.getloadavg()[0]:.1f}", flush=True)
    for ranks, steps in shapes:  # type: ignore[misc]
        run = ensure_run(args.dir / f"r{ranks}-s{steps}", ranks, steps, args.accum)
        if impls:
            rows.extend(bench(run, ranks, steps, impls, cold_only=cold_only))
    if args.sparse and not args.sweep:
        ranks, steps = (int(x) for x in args.sparse.split("x"))
        run = ensure_sparse(args.dir / f"r{ranks}-s{steps}-sparse", ranks, steps, args.accum)
        if impls:
            rows.extend(bench(run, ranks, steps, impls, sparse=True, cold_only=cold_only))
    if rows:
        print(f"\n{os.cpu_count()} cores; load = 1-minute load average before–after each pair of reports")
        print(
            "| ranks × steps | rank files (MB) | index (MB) | path | steps read raw | cold s | cold CPU s "
            "| cold peak RSS (GB) | warm s | warm CPU s | warm peak RSS (GB) | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
