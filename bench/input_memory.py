"""Peak memory of the probe's input reading: image batches (3x224x224) of varying size, bare vs probed.

The probe hashes every micro-batch's model input (probe/instruments/data.py, `input_hash`). This
runs a small conv net under DDP (gloo, CPU) on batches of 3x224x224 whose size changes every step
(the case that used to keep one int64 multiplier per input size), once bare and once under
`ddp-doctor run` per arm, interleaved, and prints the peak RSS of the largest process of each run
(ru_maxrss of the children of a fresh parent per run). Goal: probed - bare < max(1 %, 16 MiB).

    python bench/input_memory.py [--nproc 2] [--steps 12] [--repeats 2] [--level basic]
    python bench/input_memory.py --hash-only   # input_hash alone, one process, no training

`--hash-only` hashes nine batch sizes (24-32) of 3x224x224 float32 twice in this process and
prints the peak RSS above the inputs themselves.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = """
import torch, torch.distributed as dist, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 7, stride=4), torch.nn.ReLU(),
                          torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))
model = DDP(net)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range({steps}):
    batch = 24 + step % 9  # a new input size every step
    x, y = torch.randn(batch, 3, 224, 224), torch.randint(0, 10, (batch,))
    F.cross_entropy(model(x), y).backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
"""

# A fresh parent per run: RUSAGE_CHILDREN's ru_maxrss is the largest of all children waited for.
MEASURE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
)


def peak_mib(argv: list[str]) -> float:
    done = subprocess.run([sys.executable, "-c", MEASURE, *argv], check=True, capture_output=True, text=True)
    return float(done.stdout.strip().splitlines()[-1])


def hash_only() -> None:
    import resource

    import torch

    from ddp_doctor.probe.instruments.data import input_hash

    inputs = [torch.randn(b, 3, 224, 224) for b in range(24, 33)]
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hashes = [input_hash(x) for _ in range(2) for x in inputs]
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    print(f"{len(hashes)} hashes of 3x224x224 batches 24-32: peak RSS above the inputs {peak:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--level", default="basic")
    parser.add_argument("--hash-only", action="store_true", help="input_hash alone, in this process")
    args = parser.parse_args()
    if args.hash_only:
        hash_only()
        return
    peaks: dict[str, list[float]] = {"bare": [], "probed": []}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "images.py"
        script.write_text(SCRIPT.format(steps=args.steps))
        torchrun = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={args.nproc}",
        ]
        for repeat in range(args.repeats):
            peaks["bare"].append(peak_mib([*torchrun, str(script)]))
            run = Path(tmp) / f"run{repeat}"
            probe = [
                sys.executable,
                "-m",
                "ddp_doctor.cli",
                "run",
                "--out",
                str(run),
                "--level",
                args.level,
                "--",
            ]
            peaks["probed"].append(peak_mib([*probe, *torchrun, str(script)]))
            print(
                f"repeat {repeat}: bare {peaks['bare'][-1]:.0f} MiB, probed {peaks['probed'][-1]:.0f} MiB",
                flush=True,
            )
    bare, probed = max(peaks["bare"]), max(peaks["probed"])
    print(
        f"\n{args.nproc} ranks, {args.steps} steps of 3x224x224 batches 24-32, --level {args.level}: "
        f"peak RSS bare {bare:.0f} MiB, probed {probed:.0f} MiB, {probed - bare:+.0f} MiB "
        f"({(probed - bare) / bare:+.1%})"
    )


if __name__ == "__main__":
    main()
