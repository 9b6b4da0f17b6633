"""What does the probe cost? Step time of the reference trainer with and without `ddp-doctor run`.

Runs the reference trainer (default: `small` preset, 4 ranks, gloo on CPU) once per arm — no
probe, `--level basic`, `--level full` — repeated and interleaved (none, basic, full, none, ...)
so that load drift on a shared machine hits every arm alike. Step times come from the trainer's
own timer (rank 0's metrics.jsonl), after dropping the first warm-up steps. Because wall time on
a shared machine drifts with other users' load, it also reports the CPU time (user + sys) of the
whole process tree per run, which load does not inflate; it includes start-up (~60 ms of probe
import per process), so it overstates the per-step ratio slightly. Prints the ratio of
median step times per level (goal: basic <= 1.03x, full <= 1.10x at --every 10), the ratio
of mean step times (which, unlike the median, includes the update/parameter sample taken every 5
steps at every level, and the checksum steps), and the
bytes the probe wrote per optimizer step and rank.

`--compile off,after_ddp` runs every arm eager and compiled (the trainer's `torch.compile`,
inductor, `torch.compile(DDP(model))`; `before_ddp` is DDP(torch.compile(model))), all interleaved
in one run, and prints one table per compile mode, each against its own bare arm. The peak RSS
column is the largest resident set of any one process of the run (ru_maxrss of the children).

    python bench/overhead.py [--preset small] [--nproc 4] [--steps 14] [--repeats 2] [--every 10]
                             [--compile off,after_ddp]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import cast

from ddp_doctor.trainer.config import CompileMode, TrainConfig
from ddp_doctor.trainer.launch import METRICS_FILE, build_command

ARMS = ("none", "basic", "full")
# `basic` without the logged-loss capture (probe/capture, DDP_DOCTOR_CAPTURE=0): its cost side by side
NO_CAPTURE = "basic-nocapture"


def step_times(out_dir: Path, warmup: int) -> list[float]:
    lines = (out_dir / METRICS_FILE).read_text().splitlines()
    return [json.loads(line)["time"] for line in lines][warmup:]


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_arm(arm: str, cfg: TrainConfig, nproc: int, every: int, work: Path) -> tuple[float, float]:
    """Run one arm; return the CPU seconds its whole process tree used and the peak RSS (MiB) of
    its largest process (a fresh interpreter per arm: ru_maxrss of the children is the largest
    of every child waited for so far, so each arm runs under its own `python -c` parent)."""
    out_dir = work / "trainer"
    command = build_command(
        TrainConfig(**{**cfg.__dict__, "out_dir": str(out_dir), "progress": False}), nproc
    )
    argv = command.argv
    env = dict(command.env)
    if arm == NO_CAPTURE:
        arm, env["DDP_DOCTOR_CAPTURE"] = "basic", "0"
    if arm != "none":
        argv = [
            sys.executable,
            "-m",
            "ddp_doctor.cli",
            "run",
            "--out",
            str(work / "run"),
            "--level",
            arm,
            "--every",
            str(every),
            "--",
            *argv,
        ]
    before = children_cpu_seconds()
    wrapper = [sys.executable, "-c", _MEASURE, *argv]
    done = subprocess.run(
        wrapper, env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    return children_cpu_seconds() - before, float(done.stdout.strip().splitlines()[-1])


# The arm's parent: runs the command and prints the largest child's peak RSS in MiB (Linux: KiB).
_MEASURE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
)


def bytes_per_step(run_dir: Path) -> tuple[float, float]:
    """(mean bytes of a `step` record, all bytes written per optimizer step) over rank files."""
    step_bytes, total, steps = [], 0, 0
    for path in sorted((run_dir / "ranks").glob("rank-*.jsonl")):
        data = path.read_bytes()
        total += len(data)
        for line in data.splitlines():
            if b'"kind":"step"' in line:
                step_bytes.append(len(line) + 1)
        steps += sum(1 for line in data.splitlines() if b'"kind":"step"' in line)
    return statistics.mean(step_bytes), total / steps


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="small")
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--accum", type=int, default=8)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=4, help="first steps dropped (start-up, allocator)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument(
        "--arms", default=",".join(ARMS), help=f"comma-separated, first is the baseline; also {NO_CAPTURE}"
    )
    parser.add_argument(
        "--compile", default="off", help="comma-separated trainer compile modes: off, after_ddp, before_ddp"
    )
    args = parser.parse_args()
    arms = tuple(args.arms.split(","))
    modes = tuple(args.compile.split(","))
    cells = [(mode, arm) for mode in modes for arm in arms]
    times: dict[tuple[str, str], list[float]] = {cell: [] for cell in cells}
    cpu: dict[tuple[str, str], list[float]] = {cell: [] for cell in cells}
    rss: dict[tuple[str, str], list[float]] = {cell: [] for cell in cells}
    sizes: dict[tuple[str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for mode, arm in cells:
                cfg = TrainConfig(
                    preset=args.preset,
                    steps=args.steps,
                    accum=args.accum,
                    micro_batch=args.micro_batch,
                    seq_len=args.seq_len,
                    compile=cast("CompileMode", mode),
                )
                work = Path(tmp) / f"{mode}-{arm}-{repeat}"
                cell = (mode, arm)
                seconds, peak = run_arm(arm, cfg, args.nproc, args.every, work)
                cpu[cell].append(seconds)
                rss[cell].append(peak)
                times[cell] += step_times(work / "trainer", args.warmup)
                if arm != "none":
                    sizes[cell] = bytes_per_step(work / "run")
                print(
                    f"repeat {repeat} compile={mode} {arm:15s}: median step {statistics.median(times[cell]):.3f} s, "
                    f"CPU {seconds:.1f} s, peak RSS {peak:.0f} MiB",
                    flush=True,
                )
    for mode in modes:
        first = (mode, arms[0])
        base = statistics.median(times[first])
        base_mean = statistics.mean(times[first])
        base_cpu = statistics.median(cpu[first])
        base_rss = max(rss[first])
        print(
            f"\n{args.preset} preset, compile {mode}, {args.nproc} ranks, accum {args.accum}, --every {args.every}, "
            f"{args.repeats} interleaved repeats, {len(times[first])} steps per arm"
        )
        print(
            f"{arms[0]}: median step {base:.3f} s, median CPU per run {base_cpu:.1f} s, peak RSS {base_rss:.0f} MiB"
        )
        for arm in arms[1:]:
            cell = (mode, arm)
            step_record, per_step = sizes.get(cell, (float("nan"), float("nan")))
            print(
                f"{arm:15s}: median step {statistics.median(times[cell]):.3f} s, "
                f"ratio {statistics.median(times[cell]) / base:.3f}x (mean-step ratio "
                f"{statistics.mean(times[cell]) / base_mean:.3f}x: includes the every-5-steps update sample); CPU ratio "
                f"{statistics.median(cpu[cell]) / base_cpu:.3f}x; peak RSS {max(rss[cell]):.0f} MiB "
                f"({max(rss[cell]) - base_rss:+.0f}); step record {step_record:.0f} B, "
                f"all records {per_step:.0f} B per optimizer step and rank"
            )


if __name__ == "__main__":
    main()
