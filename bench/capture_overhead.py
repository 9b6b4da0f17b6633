"""What does the logged-loss capture cost per line a script prints? (probe/capture/streams.py)

In one process, with the probe started on a temporary run directory (records really written),
times `print()` of three kinds of lines to /dev/null through the real stream and through the
capture's TeeStream, interleaved in rounds: a line without "loss", a loss line
(`step 10 | loss 2.3100 | lr 3e-4`, parsed and recorded), and a tqdm-style redraw ("\\r").
Prints the cost per call in microseconds (best round: the least disturbed by other load) and the extra cost per optimizer step of a script that
prints one loss line per step. bench/overhead.py --arms basic-nocapture,basic measures the same
on whole runs of the reference trainer.

    python bench/capture_overhead.py [--lines 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ddp_doctor.probe.capture import streams
from ddp_doctor.probe.options import ProbeOptions
from ddp_doctor.probe.state import PROBE
from ddp_doctor.probe.steps import StepAccumulator

LINES = {
    "plain line": "epoch 1 | 120/500 batches | 35.2 ms/batch\n",
    "loss line": "step 10 | loss 2.3100 | lr 3e-4 | 35.2 ms\n",
    "tqdm redraw": "\r 24%|##4       | 120/500 [00:04<00:13, 28.1it/s, loss=2.31]",
}


def per_call(stream, text: str, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        print(text, end="", file=stream)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as devnull:
        PROBE.start(ProbeOptions(run_dir=Path(tmp)))
        PROBE.steps = StepAccumulator()
        PROBE.recorder.open(0, {"kind": "header"})
        tee = streams.TeeStream(devnull, "stdout")
        raw: dict[str, list[float]] = {k: [] for k in LINES}
        wrapped: dict[str, list[float]] = {k: [] for k in LINES}
        for _ in range(args.rounds):
            for kind, text in LINES.items():
                raw[kind].append(per_call(devnull, text, args.lines))
                PROBE.steps.step += 1  # a new window: the per-window record cap does not kick in
                wrapped[kind].append(per_call(tee, text, args.lines))
        size = PROBE.recorder.path.stat().st_size
        PROBE.recorder.close()
    print(f"{args.rounds} rounds x {args.lines} print() calls each, to /dev/null (best round, per call):")
    for kind in LINES:
        r, w = min(raw[kind]), min(wrapped[kind])
        print(f"  {kind:12s}: {r:6.2f} us plain, {w:6.2f} us captured (+{w - r:.2f} us)")
    extra = min(wrapped["loss line"]) - min(raw["loss line"])
    print(f"one loss line per optimizer step costs {extra:.1f} us per step; records written: {size} bytes")


if __name__ == "__main__":
    main()
