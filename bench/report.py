"""Benchmark `ddp-doctor report` on large synthetic runs (default 8 ranks × 100k steps).

    python bench/report.py [--ranks 8] [--steps 100000] [--accum 2] [--dir /tmp/ddp-doctor-bench]
    python bench/report.py --sweep [--dir /tmp/ddp-doctor-bench]   # the scaling table

The run directory is written once by tests/fixtures/synth_run.py — through ddp_doctor.rundir.records, the
probe's own record check and encoder, so the bytes are what the probe writes — and reused if it
already exists with the same shape. Then `ddp-doctor report --format json` runs in a fresh
process twice: cold (no column cache: every rank file parsed, the Arrow cache written) and warm
(cache present). Prints wall time, CPU time (user + sys of the report process and its parser
workers: what the run costs whatever else the machine is doing) and the peak resident memory of
the whole process tree (sampled every 20 ms), the machine's load average, and a table row for
docs/report.md. ``--sweep`` does this for ranks 8…1,024 at 2,000 steps and steps 12.5k…100k at 8
ranks (each run directory DIR/rR-sN, generated once).
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
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def ensure_run(path: Path, ranks: int, steps: int, accum: int) -> Path:
    from fixtures.synth_run import SynthSpec, write_run

    shape = {"ranks": ranks, "steps": steps, "accum": accum, "writer": 2}
    marker = path / "bench-shape.json"
    if marker.exists() and json.loads(marker.read_text()) == shape:
        return path
    if path.exists():
        shutil.rmtree(path)
    t = time.perf_counter()
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
    marker.write_text(json.dumps(shape))
    print(f"generated {path} in {time.perf_counter() - t:.1f} s", flush=True)
    return path


def timed_report(run: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (GB, summed over the process tree) of one `report`."""
    cmd = [sys.executable, "-m", "ddp_doctor.cli", "report", str(run), "--format", "json", "-o", os.devnull]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
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
    return wall, _children_cpu(), peak / 1e9


_cpu_seen = 0.0


def _children_cpu() -> float:
    """CPU seconds of the children reaped since the last call (they include their own workers)."""
    global _cpu_seen
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    delta, _cpu_seen = total - _cpu_seen, total
    return delta


def bench(run: Path, ranks: int, steps: int, accum: int) -> str:
    from ddp_doctor.rundir.records import CACHE_DIR, RANKS_DIR

    size = sum(f.stat().st_size for f in (run / RANKS_DIR).glob("*.jsonl"))
    print(f"run: {ranks} ranks × {steps} steps, accumulation {accum}, {size / 1e6:.0f} MB", flush=True)
    shutil.rmtree(run / CACHE_DIR, ignore_errors=True)
    _children_cpu()
    load0 = os.getloadavg()[0]
    cold, cold_cpu, cold_rss = timed_report(run)
    warm, warm_cpu, warm_rss = timed_report(run)
    load1 = os.getloadavg()[0]
    print(
        f"cold {cold:.1f} s (CPU {cold_cpu:.1f} s, peak RSS {cold_rss:.2f} GB), "
        f"warm {warm:.2f} s (CPU {warm_cpu:.2f} s, peak RSS {warm_rss:.2f} GB)"
    )
    print(f"load average (1 min) before/after: {load0:.1f} / {load1:.1f} on {os.cpu_count()} cores")
    row = (
        f"| {ranks:,} | {steps:,} | {size / 1e6:,.0f} | {cold:.1f} | {cold_cpu:.1f} | {warm:.2f} | "
        f"{warm_cpu:.2f} | {max(cold_rss, warm_rss):.2f} | {load0:.1f}–{load1:.1f} |"
    )
    print(row, flush=True)
    return row


# --sweep: ranks at a fixed number of steps, and steps at a fixed number of ranks
SWEEP = [(r, 2000) for r in (8, 64, 256, 1024)] + [(8, n) for n in (12_500, 25_000, 50_000, 100_000)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-bench"))
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--sweep", action="store_true", help="the scaling table (runs in DIR/rR-sN)")
    args = ap.parse_args()
    shapes = SWEEP if args.sweep else [(args.ranks, args.steps)]
    rows = []
    for ranks, steps in shapes:
        where = args.dir / f"r{ranks}-s{steps}" if args.sweep else args.dir
        run = ensure_run(where, ranks, steps, args.accum)
        if not args.generate_only:
            rows.append(bench(run, ranks, steps, args.accum))
    if rows:
        print(
            "| ranks | steps | rank files (MB) | cold s | cold CPU s | warm s | warm CPU s | peak RSS (GB) | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
