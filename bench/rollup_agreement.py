"""How far the report's rollup path is from the full raw read, on the synthetic suite (docs/report.md).

    python bench/rollup_agreement.py [--steps 2000] [--every 25] [--worlds 1,2,3,4]

For every fault of tests/fixtures/synth_run.py and a clean run, at each world size: the run is
indexed with `summarize` (R = --every, so that most windows come from their rollups), then diagnosed
by both paths (`read_run(rollups="off")` and `"on"`). Printed: runs whose verdicts or finding
statuses differ (the goal: none), the share of steps read raw, and for each number the two paths
report — the run facts (noise-band ratio, B_simple, effective batch) and every numeric evidence
field a finding has on both paths — the largest relative difference over the suite (|a−b| / max(|a|, |b|))
and the largest absolute one, with the run where each occurred. Counts (integers on both paths) are
listed apart: they count the steps a finding was decided on, which the rollup path reads fewer of.
The rollup path is then read a second time, warm, from its caches (rundir/rollup_cache.py, on for
every run here): every verdict, status, evidence number and problem must equal the cold read's.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures.synth_run import FAULTS, SynthSpec, write_run  # noqa: E402

from ddp_doctor.analysis.diagnose import Diagnosis, diagnose_run  # noqa: E402
from ddp_doctor.rundir import rollup_cache, summarize  # noqa: E402
from ddp_doctor.rundir.reader import read_run  # noqa: E402

rollup_cache.CACHE_MIN_BYTES = 0  # every run's second rollup read comes from the caches
SKIP = {(1, "rank-skew")}  # the synthetic writer needs two ranks for a skew


def _numbers(value: Any, prefix: str = "") -> dict[str, float]:
    """Every finite number in an evidence tree, by its path."""
    out: dict[str, float] = {}
    if isinstance(value, bool):
        return out
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            out[prefix] = float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.update(_numbers(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list) and len(value) <= 8:
        for i, v in enumerate(value):
            out.update(_numbers(v, f"{prefix}[{i}]"))
    return out


def _facts(d: Diagnosis) -> dict[str, float]:
    r = d.run_info
    out = {
        "noise_band.ratio": r["noise_band"].get("ratio"),
        "gradient_noise_scale.b_simple": r["gradient_noise_scale"].get("b_simple"),
        "effective_batch.samples": r["effective_batch"].get("samples"),
        "effective_batch.tokens": r["effective_batch"].get("tokens"),
    }
    return {k: float(v) for k, v in out.items() if isinstance(v, (int, float)) and math.isfinite(v)}


def _same(cold: Diagnosis, warm: Diagnosis) -> bool:
    """The warm read's report is the cold one's: problems, and every finding's status and numbers."""
    return warm.run_info["problems"] == cold.run_info["problems"] and [
        (f.id, f.status, _numbers(f.evidence)) for f in warm.findings
    ] == [(f.id, f.status, _numbers(f.evidence)) for f in cold.findings]


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--worlds", default="1,2,3,4")
    args = ap.parse_args()
    warm_differ: list[str] = []
    print(f"load before {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.time()
    differ, runs, shares = [], 0, []
    worst: dict[str, tuple[float, str]] = {}
    worst_abs: dict[str, tuple[float, str]] = {}
    counts: set[str] = set()
    facts: dict[str, tuple[float, str]] = {}
    for world in (int(w) for w in args.worlds.split(",")):
        for fault in ("clean", *FAULTS):
            if (world, fault) in SKIP:
                continue
            where = f"{fault}@{world}"
            spec = SynthSpec(world_size=world, steps=args.steps, faults=() if fault == "clean" else (fault,))
            run = write_run(Path(tempfile.mkdtemp()) / "run", spec)
            summarize.summarize(run, None, every=args.every)
            raw = diagnose_run(read_run(run, rollups="off"))
            rolled = diagnose_run(read_run(run, rollups="on"))
            if not _same(rolled, diagnose_run(read_run(run, rollups="on"))):
                warm_differ.append(where)
                print(f"WARM DIFFERS {where}", flush=True)
            runs += 1
            view = rolled.context.run.rollups
            shares.append(view.raw_steps / max(view.steps_total, 1) if view else 1.0)
            by_id = {f.id: f for f in rolled.findings}
            d = [
                (a.id, a.verdict, b.verdict)
                for a, b in zip(raw.hypotheses, rolled.hypotheses)
                if a.verdict != b.verdict
            ]
            d += [
                (f.id, f.status, by_id[f.id].status) for f in raw.findings if f.status != by_id[f.id].status
            ]
            if d:
                differ.append((where, d))
                print(f"DIFFER {where}: {d}", flush=True)
            for k, a in _facts(raw).items():
                b = _facts(rolled).get(k)
                if b is not None and rel(a, b) >= facts.get(k, (-1.0, ""))[0]:
                    facts[k] = (rel(a, b), where)
            for f in raw.findings:
                g = by_id[f.id]
                if f.status != g.status:
                    continue
                na, nb = _numbers(f.evidence), _numbers(g.evidence)
                for k in na.keys() & nb.keys():
                    key = f"{f.id}: {k}"
                    if na[k].is_integer() and nb[k].is_integer():
                        counts.add(key)
                    if rel(na[k], nb[k]) >= worst.get(key, (-1.0, ""))[0]:
                        worst[key] = (rel(na[k], nb[k]), where)
                    if abs(na[k] - nb[k]) >= worst_abs.get(key, (-1.0, ""))[0]:
                        worst_abs[key] = (abs(na[k] - nb[k]), where)
    print(
        f"\n{runs} runs ({args.steps} steps, R = {args.every}, worlds {args.worlds}) in {time.time() - t0:.0f} s"
    )
    print(f"verdicts and finding statuses differ on {len(differ)} run(s): {differ}")
    print(
        f"the warm rollup read (from the caches) differs from the cold one on {len(warm_differ)} run(s): {warm_differ}"
    )
    print(
        f"steps read raw: mean {sum(shares) / len(shares):.0%}, min {min(shares):.0%}, max {max(shares):.0%}"
    )
    print("\n| run fact | largest relative difference | run |\n|---|---|---|")
    for k, (v, w) in sorted(facts.items()):
        print(f"| {k} | {v:.1%} | {w} |")
    print(
        "\n| finding: evidence number | largest relative difference | run | largest absolute difference | run |"
    )
    print("|---|---|---|---|---|")
    for k, (v, w) in sorted(worst.items(), key=lambda kv: -kv[1][0]):
        if v > 0 and k not in counts:
            a, wa = worst_abs[k]
            print(f"| {k} | {v:.1%} | {w} | {a:.3g} | {wa} |")
    print(
        "\ncounts (steps decided on; the rollup path reads fewer):",
        ", ".join(sorted(k for k in counts if worst[k][0] > 0)),
    )
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
