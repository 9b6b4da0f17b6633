"""Benchmark `ddp-doctor report --format json` on a large synthetic run (default 8 ranks × 100k steps).

    python bench/report.py [--ranks 8] [--steps 100000] [--accum 2] [--dir /tmp/ddp-doctor-bench]

The run directory is generated once (tests/fixtures/synth_run.py, the exact run format) and reused
if it already exists with the same shape. Prints the wall time of each phase — reading the rank
files, the analysis, rendering — and of the whole `report` command in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

GOAL_S = 5.0


def ensure_run(path: Path, ranks: int, steps: int, accum: int) -> Path:
    from fixtures.synth_run import SynthSpec, write_run

    shape = {"ranks": ranks, "steps": steps, "accum": accum}
    marker = path / "bench-shape.json"
    if marker.exists() and json.loads(marker.read_text()) == shape:
        return path
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
    print(f"generated {path} in {time.perf_counter() - t:.1f} s")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-bench"))
    args = ap.parse_args()
    run = ensure_run(args.dir, args.ranks, args.steps, args.accum)
    size = sum(f.stat().st_size for f in (run / "ranks").glob("*.jsonl"))
    print(
        f"run: {args.ranks} ranks × {args.steps} steps, accumulation {args.accum}, "
        f"{size / 1e6:.0f} MB of rank files"
    )

    from ddp_doctor.analysis.context import build_context
    from ddp_doctor.analysis.diagnose import diagnose_run, run_findings
    from ddp_doctor.report.to_json import render_json
    from ddp_doctor.rundir import read_run

    t0 = time.perf_counter()
    data = read_run(run)
    t1 = time.perf_counter()
    ctx = build_context(data)
    t2 = time.perf_counter()
    run_findings(ctx)
    t3 = time.perf_counter()
    render_json(diagnose_run(data))
    t4 = time.perf_counter()
    print(
        f"cold read (parse + write cache) {t1 - t0:.2f} s ({size / 1e6 / (t1 - t0):.0f} MB/s) | "
        f"quantities {t2 - t1:.2f} s | "
        f"checks {t3 - t2:.2f} s | diagnose+render {t4 - t3:.2f} s"
    )
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ddp_doctor.cli",
            "report",
            str(run),
            "--format",
            "json",
            "--output",
            "/dev/null",
        ],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    total = time.perf_counter() - t
    print(f"`ddp-doctor report --format json`, warm cache: {total:.2f} s (goal < {GOAL_S:g} s)")


if __name__ == "__main__":
    main()
