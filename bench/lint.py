"""How fast is `ddp-doctor lint`? Files per second on a generated corpus.

Generates N training scripts (about 100-400 lines each: a DDP training loop in one of several
shapes — nested or guarded accumulation, class-based or plain functions, with or without each
pitfall — plus ordinary helper code), then times ``lint_paths`` over the folder: discovery,
reading, parsing and all 14 rules, exactly what the CLI does. Also times ``ast.parse`` alone,
so the rules' own cost is visible. The goal is >= 200 files/s on the 2-core CI machine.

Both wall-clock and CPU time (``time.process_time``, this process only) are reported: on a
shared machine other jobs stretch the wall clock, while CPU seconds are what lint itself costs.
The load average is printed so a reader can tell which number to trust.

    python bench/lint.py [--files 1000] [--seed 0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from ddp_doctor.lint.engine import lint_paths

HEADER = """\
import math
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
"""

NESTED = """\
def train_{n}(model, dataset, {opt}, {sched}, scaler, accum, epochs, rank):
    model = DDP(model, device_ids=[rank]{find_unused})
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    it = iter(loader)
    for epoch in range(epochs):
        {set_epoch}
        for step in range(100):
            for micro in range(accum):
                {zero_grad_micro}
                x, y = next(it)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = F.cross_entropy(model(x), y){divide}
                scaler.scale(loss).backward()
                {sched_micro}
            scaler.unscale_({opt})
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step({opt})
            scaler.update()
            {sched}.step()
            {opt}.zero_grad(set_to_none=True)
            if rank == 0 and step % 10 == 0:
                print(f"step {{step}} loss {{loss.item():.4f}}")
"""

GUARDED = """\
class Trainer{n}:
    def __init__(self, model, {opt}, {sched}, accumulation_steps):
        self.model = DDP(model{find_unused})
        self.{opt} = {opt}
        self.{sched} = {sched}
        self.accumulation_steps = accumulation_steps

    def compute_loss(self, batch):
        out = self.model(batch["input_ids"])
        return F.cross_entropy(out.flatten(0, 1), batch["labels"].flatten()){divide}

    def fit(self, loader):
        for i, batch in enumerate(loader):
            {zero_grad_micro}
            loss = self.compute_loss(batch)
            loss.backward()
            {sched_micro}
            if (i + 1) % self.accumulation_steps == 0:
                self.{opt}.step()
                self.{sched}.step()
                self.{opt}.zero_grad()
"""

FILLER = """\
def helper_{n}(values, scale={k}):
    total = 0.0
    for i, v in enumerate(values):
        if v > scale:
            total += math.sqrt(v) * i
        else:
            total -= v / (i + 1)
    return {{"total": total, "count": len(values), "path": os.path.join("out", str({k}))}}
"""


MODEL = """\
class Block{n}(torch.nn.Module):
    def __init__(self, dim: int = {k}) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.proj = torch.nn.Linear(dim, 4 * dim)
        self.out = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = self.proj(self.norm(x))
        return x + self.out(F.gelu(h))
"""


def make_module(rng: random.Random, n: int) -> str:
    """An ordinary module of a training repository: model code and helpers, no training loop."""
    parts = [HEADER] + [MODEL.format(n=f"{n}_{k}", k=32 * (k + 1)) for k in range(rng.randint(1, 4))]
    parts += [FILLER.format(n=f"{n}_{k}", k=k) for k in range(rng.randint(2, 25))]
    return "\n\n".join(parts)


def make_file(rng: random.Random, n: int) -> str:
    """A training script: one to three DDP training loops with random pitfalls, plus helpers."""
    parts = [HEADER]
    for j in range(rng.randint(1, 3)):
        template = rng.choice([NESTED, GUARDED])
        opt = rng.choice(["optimizer", "opt", "optim"])
        sched = rng.choice(["scheduler", "lr_scheduler", "sched"])
        parts.append(
            template.format(
                n=f"{n}_{j}",
                opt=opt,
                sched=sched,
                find_unused=rng.choice(["", "", ", find_unused_parameters=True"]),
                set_epoch=rng.choice(["sampler.set_epoch(epoch)", "pass"]),
                zero_grad_micro=rng.choice(
                    ["pass", "pass", f"{'self.' if template is GUARDED else ''}{opt}.zero_grad()"]
                ),
                sched_micro=rng.choice(
                    ["pass", "pass", f"{'self.' if template is GUARDED else ''}{sched}.step()"]
                ),
                divide=rng.choice([" / accum" if template is NESTED else " / self.accumulation_steps", ""]),
            )
        )
    parts += [FILLER.format(n=f"{n}_{k}", k=k) for k in range(rng.randint(2, 25))]
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--training-share",
        type=float,
        default=1.0,
        help="fraction of files that are training scripts (default 1.0: the worst case)",
    )
    parser.add_argument(
        "--path",
        type=Path,
        action="append",
        help="time these existing directories instead (e.g. an installed package), file and project mode",
    )
    args = parser.parse_args()
    if args.path:
        real_code(args.path, args.repeat)
        return
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        lines = 0
        for n in range(args.files):
            text = make_file(rng, n) if rng.random() < args.training_share else make_module(rng, n)
            lines += text.count("\n")
            (root / f"train_{n:05d}.py").write_text(text, encoding="utf-8")
        timings: dict[str, list[tuple[float, float]]] = {"parse": [], "lint": []}
        findings = 0
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            for path in sorted(root.glob("*.py")):
                ast.parse(path.read_text(encoding="utf-8"))
            timings["parse"].append((time.perf_counter() - wall, time.process_time() - cpu))
            wall, cpu = time.perf_counter(), time.process_time()
            result = lint_paths([root], project=False)
            timings["lint"].append((time.perf_counter() - wall, time.process_time() - cpu))
            findings = len(result.findings)
            assert result.files == args.files and not result.diagnostics, result.diagnostics[:3]
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(
            f"training scripts: {100 * args.training_share:.0f}%  files: {args.files}  lines: {lines}  (mean {lines / args.files:.0f} lines/file)  findings: {findings}  "
            f"load average: {load:.1f} on {os.cpu_count()} CPUs"
        )
        for label, key in (("read+parse only", "parse"), ("ddp-doctor lint", "lint")):
            wall_s = statistics.median(t[0] for t in timings[key])
            cpu_s = statistics.median(t[1] for t in timings[key])
            print(
                f"{label}: {args.files / wall_s:7.0f} files/s wall   {args.files / cpu_s:7.0f} files/s per CPU-second "
                f"({lines / cpu_s:,.0f} lines/CPU-s; median of {args.repeat})"
            )


def real_code(paths: list[Path], repeat: int) -> None:
    """File mode (``--no-project``) vs project mode over existing directories, wall and CPU."""
    for mode in (False, True):
        runs = []
        for _ in range(repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            result = lint_paths(paths, project=mode)
            runs.append((time.perf_counter() - wall, time.process_time() - cpu))
        wall_s = statistics.median(r[0] for r in runs)
        cpu_s = statistics.median(r[1] for r in runs)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(
            f"{'project' if mode else 'file'} mode: {result.files} files, {len(result.findings)} findings, "
            f"{len(result.diagnostics)} file problems: {result.files / wall_s:.0f} files/s wall "
            f"({wall_s:.1f} s), {result.files / cpu_s:.0f} files/CPU-s; load {load:.1f} (median of {repeat})"
        )


if __name__ == "__main__":
    main()
