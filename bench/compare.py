"""Benchmark `ddp-doctor compare` on two 100-step runs (the issue's "interactive" goal: < 2 s warm).

    python bench/compare.py [--steps 100] [--repeat 5] [--dir /tmp/ddp-doctor-bench-compare]

Writes two synthetic run directories (tests/fixtures/synth_run.py, the exact run format): A with 2
ranks × accumulation 4, B with 8 ranks × accumulation 4 (4× the global batch). Prints, side by side
in one run: the in-process time of diagnose(A) + diagnose(B) + compare + text rendering (warm: the
second and later repeats), and the wall time of the whole `ddp-doctor compare` command in a fresh
process (imports included), each as the median of the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
GOAL_WARM_S = 2.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-bench-compare"))
    args = ap.parse_args()

    import shutil

    from fixtures.synth_run import SynthSpec, write_run

    shutil.rmtree(args.dir, ignore_errors=True)
    a = write_run(args.dir / "a", SynthSpec(steps=args.steps, world_size=2, accum=4))
    b = write_run(args.dir / "b", SynthSpec(steps=args.steps, world_size=8, accum=4, seed=1))

    from ddp_doctor.analysis.diagnose import diagnose
    from ddp_doctor.compare.analysis import compare
    from ddp_doctor.compare.render import render_text

    inproc = []
    for _ in range(args.repeat + 1):
        t = time.perf_counter()
        render_text(compare(diagnose(a), diagnose(b)))
        inproc.append(time.perf_counter() - t)
    cli = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ddp_doctor.cli", "compare", str(a), str(b)], check=True,
                       capture_output=True)  # fmt: skip
        cli.append(time.perf_counter() - t)
    warm = statistics.median(inproc[1:])
    print(f"steps per run: {args.steps}; repeats: {args.repeat}")
    print(f"in-process diagnose×2 + compare + render: first {inproc[0]:.3f} s, warm median {warm:.3f} s")
    print(f"`ddp-doctor compare` command (fresh process): median {statistics.median(cli):.3f} s")
    print(f"goal: warm < {GOAL_WARM_S} s → {'met' if warm < GOAL_WARM_S else 'NOT met'}")


if __name__ == "__main__":
    main()
