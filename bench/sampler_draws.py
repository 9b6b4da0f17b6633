"""What does counting sampler draws cost per index? (probe/instruments/data.py, issue 22)

In one process, with the probe started on a temporary run directory (records really written),
iterates a DistributedSampler over a dataset of ``--size`` items, as a DataLoader does (one
``next`` per index), bare, with the probe's ``__iter__`` wrapper as before issue 22 (index list
hashed into a `sampler` record, plain list iterator), and as now (draws counted), interleaved in
rounds; an optimizer step closes every
``--batch`` indices so the step-crediting path runs as in training. Prints the best round of
each and the side-by-side ratio.

    python bench/sampler_draws.py [--size 160000] [--rounds 5] [--batch 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from torch.utils.data.distributed import DistributedSampler

from ddp_doctor.probe.instruments import data
from ddp_doctor.probe.options import ProbeOptions
from ddp_doctor.probe.state import PROBE
from ddp_doctor.probe.steps import StepAccumulator


def epoch(sampler: DistributedSampler, batch: int) -> float:
    start = time.perf_counter()
    for i, _ in enumerate(iter(sampler)):
        if i % batch == batch - 1:
            PROBE.steps.step += 1  # what the optimizer step pre-hook does to the window
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=160_000)  # one ImageNet epoch per rank on 8 ranks
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    sampler = DistributedSampler(range(args.size), num_replicas=1, rank=0, shuffle=True)
    bare_iter = DistributedSampler.__iter__
    with tempfile.TemporaryDirectory() as tmp:
        PROBE.start(ProbeOptions(run_dir=Path(tmp)))
        PROBE.steps = StepAccumulator()
        PROBE.recorder.open(0, {"kind": "header"})
        data.install()
        probed_iter = DistributedSampler.__iter__
        counting = data._Indices
        times: dict[str, list[float]] = {"bare": [], "hashed (before)": [], "hashed + counted (now)": []}
        for _ in range(args.rounds):
            DistributedSampler.__iter__ = bare_iter  # type: ignore[method-assign]
            times["bare"].append(epoch(sampler, args.batch))
            DistributedSampler.__iter__ = probed_iter  # type: ignore[method-assign]
            data._Indices = lambda indices, draws: iter(indices)  # type: ignore[assignment,misc]
            times["hashed (before)"].append(epoch(sampler, args.batch))
            data._Indices = counting  # type: ignore[misc]
            times["hashed + counted (now)"].append(epoch(sampler, args.batch))
        PROBE.recorder.close()
    b = min(times["bare"])
    print(f"{args.rounds} rounds, one epoch of {args.size} indices each (best round):")
    for arm, ts in times.items():
        t = min(ts)
        print(
            f"  {arm:24s} {t * 1e3:7.1f} ms  ratio {t / b:.2f}  +{(t - b) / args.size * 1e9:.0f} ns per index"
        )


if __name__ == "__main__":
    main()
