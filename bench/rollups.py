"""Rollup size and map/reduce cost (docs/report.md, "Rollups and scale"; issue 26).

    python bench/rollups.py [--steps 5000] [--nodes 40]

On one synthetic rank file (tests/fixtures/synth_run.py: the probe's own record encoder) prints:
bytes per step record; per R in 10, 50, 100, 500 the rollup size and its share of the rank file;
the map cost (`summarize` of one rank: µs per step, peak RSS); the accumulator's own cost per step
(what the probe adds to a training step); the reduce cost (merging NODES node summaries: µs per
node-window, and parsing one node summary). And the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures.synth_run import SynthSpec, write_run  # noqa: E402

from ddp_doctor.rundir import records, rollups, summarize  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--nodes", type=int, default=40)
    args = ap.parse_args()
    print(f"load before {os.getloadavg()[0]:.2f}")
    run = write_run(Path(tempfile.mkdtemp()) / "r", SynthSpec(world_size=2, steps=args.steps))
    path = records.rank_file(run, 0)
    size = path.stat().st_size
    print(f"rank file {size} B, {size / args.steps:.0f} B per step")
    for every in (10, 50, 100, 500):
        res = summarize.rollups_of_file(path, 0, every)
        b = sum(len(records.encode(r)) for r in res.rollups)
        print(
            f"R={every}: {len(res.rollups)} rollups, {b / len(res.rollups):.0f} B each, "
            f"{100 * b / size:.2f}% of the rank file, {size / b:.0f}x fewer bytes"
        )
    t = time.perf_counter()
    summarize.rollups_of_file(path, 0, rollups.DEFAULT_EVERY)
    dt = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"map: {dt:.2f} s, {1e6 * dt / args.steps:.0f} us per rank-step, peak RSS {rss:.0f} MB")
    steps = [
        records.sanitize(json.loads(line), [])
        for line in path.read_bytes().splitlines()
        if line.startswith(records.line_prefix("step"))
    ]
    acc = rollups.RollupAccumulator(0, rollups.DEFAULT_EVERY)
    t = time.perf_counter()
    for rec in steps:
        acc.feed(rec)  # type: ignore[arg-type]
    print(f"accumulator (probe side): {1e6 * (time.perf_counter() - t) / len(steps):.0f} us per step")
    _, part = summarize.summarize(run, None, every=rollups.DEFAULT_EVERY)
    text = part.read_text()
    nodes = []
    for i in range(args.nodes):
        q = json.loads(text)
        q["ranks"] = {str(int(k) + 2 * i): v for k, v in q["ranks"].items()}
        nodes.append(q)
    windows = len(nodes[0]["windows"])
    t = time.perf_counter()
    rollups.merge_summaries(nodes)
    merge = time.perf_counter() - t
    t = time.perf_counter()
    json.loads(text)
    parse = time.perf_counter() - t
    print(
        f"reduce: {1e6 * merge / (args.nodes * windows):.0f} us per node-window; node summary "
        f"{len(text)} B for {windows} windows ({len(text) / windows:.0f} B per window), parsed in {1e3 * parse:.1f} ms"
    )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
