"""Benchmark `ddp-doctor report` on a large synthetic run (default 8 ranks × 100k steps).

    python bench/report.py [--ranks 8] [--steps 100000] [--accum 2] [--dir /tmp/ddp-doctor-bench]

The run directory is written once by tests/fixtures/synth_run.py — through ddp_doctor.records, the
probe's own record check and encoder, so the bytes are what the probe writes — and reused if it
already exists with the same shape. Then `ddp-doctor report --format json` runs in a fresh
process twice: cold (no column cache: every rank file parsed, the Parquet cache written) and warm
(cache present). Prints wall time and the peak resident memory of the whole process tree (the
report process and its parser workers, sampled every 20 ms), the machine's load average, and a
table row for docs/report.md.
"""

from __future__ import annotations

import argparse
import json
import os
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


def timed_report(run: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (GB, summed over the process tree) of one `report` process."""
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
    return wall, peak / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-bench"))
    ap.add_argument("--generate-only", action="store_true")
    args = ap.parse_args()
    run = ensure_run(args.dir, args.ranks, args.steps, args.accum)
    if args.generate_only:
        return
    from ddp_doctor.records import CACHE_DIR, RANKS_DIR

    size = sum(f.stat().st_size for f in (run / RANKS_DIR).glob("*.jsonl"))
    print(f"run: {args.ranks} ranks × {args.steps} steps, accumulation {args.accum}, {size / 1e6:.0f} MB")
    shutil.rmtree(run / CACHE_DIR, ignore_errors=True)
    load0 = os.getloadavg()[0]
    cold, cold_rss = timed_report(run)
    warm, warm_rss = timed_report(run)
    load1 = os.getloadavg()[0]
    print(f"cold {cold:.1f} s (peak RSS {cold_rss:.2f} GB), warm {warm:.2f} s (peak RSS {warm_rss:.2f} GB)")
    print(f"load average (1 min) before/after: {load0:.1f} / {load1:.1f} on {os.cpu_count()} cores")
    print(
        f"| {args.ranks} | {args.steps} | {size / 1e6:.0f} | {cold:.1f} | {warm:.2f} | "
        f"{max(cold_rss, warm_rss):.2f} | {load0:.1f}–{load1:.1f} |"
    )


if __name__ == "__main__":
    main()
