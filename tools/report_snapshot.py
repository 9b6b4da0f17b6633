"""Snapshot every report the suite's inputs produce, to prove a refactoring changed no output.

Issue 23: "the JSON of every report in the suite, before and after, is equal except for fields you
list and justify". Inputs are written once (so both trees read the same bytes), then each tree
renders them; `diff` lists every differing JSON path.

    # 1. inputs, written with the base tree's fixture writer (tests/fixtures/synth_run.py)
    git archive BASE src tests | tar -x -C /tmp/base
    PYTHONPATH=/tmp/base/src:/tmp/base python tools/report_snapshot.py write /tmp/snap/in
    # 2. the reports of each tree (inputs are copied first: the reader writes its cache beside them)
    PYTHONPATH=/tmp/base/src python tools/report_snapshot.py report /tmp/snap/in /tmp/snap/before
    PYTHONPATH=src python tools/report_snapshot.py report /tmp/snap/in /tmp/snap/after
    # 3. the differences
    python tools/report_snapshot.py diff /tmp/snap/before /tmp/snap/after

Inputs: a synthetic run per fault of synth_run.FAULTS (world size 2), clean runs at world sizes
1-4, an HF trainer_state.json, TensorBoard events and a W&B offline run (when those packages are
installed). Outputs: `report --format json` of each, text in en and zh, HTML of a few, the
TensorBoard export read back as scalars, and `compare --format json` of a few pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HTML_RUNS = ("clean-w2", "loss-spike", "oscillation", "hf")
EXPORT_RUNS = ("clean-w2", "grad-spike", "tb")
PAIRS = (("clean-w1", "clean-w4"), ("clean-w2", "rank-skew"), ("clean-w2", "hf"), ("hf", "tb"))


def write(inputs: Path) -> None:
    from tests.fixtures.synth_run import FAULTS, SynthSpec, write_run

    inputs.mkdir(parents=True, exist_ok=True)
    for world in (1, 2, 3, 4):
        write_run(inputs / f"clean-w{world}", SynthSpec(world_size=world, steps=120))
    for fault in FAULTS:
        write_run(inputs / fault, SynthSpec(world_size=2, steps=120, faults=(fault,)))
    log = []
    for t in range(1, 101):
        loss = 2.0 + 3.0 * math.exp(-t / 30) + 0.05 * math.sin(t * 1.7) + (4.0 if t == 70 else 0.0)
        lr = 1e-4 * min(1.0, t / 10)
        log.append(
            {
                "step": t,
                "epoch": t / 50,
                "loss": loss,
                "grad_norm": 1.0 + 0.1 * math.cos(t),
                "learning_rate": lr,
            }
        )
    (inputs / "hf").mkdir(exist_ok=True)
    state = {"global_step": 100, "train_batch_size": 4, "log_history": log}
    (inputs / "hf" / "trainer_state.json").write_text(json.dumps(state), encoding="utf-8")
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        print("tensorboard missing: no tb input", file=sys.stderr)
    else:
        w = SummaryWriter(str(inputs / "tb"))
        for rec in log:
            w.add_scalar("train/loss", rec["loss"], rec["step"])
            w.add_scalar("train/learning_rate", rec["learning_rate"], rec["step"])
            w.add_scalar("train/grad_norm", rec["grad_norm"], rec["step"])
        w.close()
    script = Path("tests/integrations/scripts/wandb_offline_run.py")
    if script.is_file():
        env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "HOME": str(inputs)}
        proc = subprocess.run(
            [sys.executable, str(script), str(inputs / "wandb-root")], env=env, capture_output=True, text=True
        )
        runs = sorted((inputs / "wandb-root" / "wandb").glob("offline-run-*"))
        if proc.returncode == 0 and runs:
            shutil.move(str(runs[0]), inputs / "wandb")
        else:
            print("wandb input not written:", proc.stderr[-500:], file=sys.stderr)
        shutil.rmtree(inputs / "wandb-root", ignore_errors=True)


def _path(run: Path) -> Path:
    return run / "trainer_state.json" if (run / "trainer_state.json").is_file() else run


def _cli(args: list[str], out: Path) -> None:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-m", "ddp_doctor.cli", *args], env=env, capture_output=True, text=True
    )
    out.with_suffix(out.suffix + ".exit").write_text(f"{proc.returncode}\n{proc.stderr}", encoding="utf-8")
    if not out.exists():
        out.write_text(proc.stdout, encoding="utf-8")


def report(inputs: Path, out: Path) -> None:
    work = out / "_inputs"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(inputs, work)
    for run in sorted(p for p in work.iterdir() if p.is_dir()):
        name, src = run.name, str(_path(run))
        _cli(["report", src, "--format", "json", "-o", str(out / f"{name}.json")], out / f"{name}.json")
        for lang in ("en", "zh"):
            _cli(["report", src, "--format", "text", "--lang", lang], out / f"{name}.{lang}.txt")
        if name in HTML_RUNS:
            _cli(["report", src, "--format", "html", "-o", str(out / f"{name}.html")], out / f"{name}.html")
        if name in EXPORT_RUNS:
            export = out / f"{name}.tb"
            _cli(
                ["report", src, "--format", "json", "--export", f"tensorboard={export}"],
                out / f"{name}.export.log",
            )
            (out / f"{name}.tb.json").write_text(
                json.dumps(_scalars(export), indent=1, sort_keys=True), encoding="utf-8"
            )
    for a, b in PAIRS:
        if (work / a).is_dir() and (work / b).is_dir():
            target = out / f"compare-{a}-{b}.json"
            _cli(
                [
                    "compare",
                    str(_path(work / a)),
                    str(_path(work / b)),
                    "--format",
                    "json",
                    "-o",
                    str(target),
                ],
                target,
            )


def _scalars(log_dir: Path) -> dict[str, Any]:
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        return {"error": "tensorboard missing"}
    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    scalars = {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    return {"scalars": scalars, "tensors": sorted(acc.Tags()["tensors"])}


def _walk(a: Any, b: Any, path: str, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                found.append(f"{path}.{key}: {'only after' if key not in a else 'only before'}")
            else:
                _walk(a[key], b[key], f"{path}.{key}", found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", found)
    elif a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
        found.append(f"{path}: {json.dumps(a)[:120]} -> {json.dumps(b)[:120]}")


def diff(before: Path, after: Path, ignore: list[str], common: bool = False) -> int:
    a_names = {p.name for p in before.iterdir() if p.is_file()}
    b_names = {p.name for p in after.iterdir() if p.is_file()}
    names = sorted(a_names & b_names if common else a_names | b_names)
    changed = 0
    for name in names:
        a, b = before / name, after / name
        if not a.is_file() or not b.is_file():
            print(f"{name}: only in {'after' if not a.is_file() else 'before'}")
            changed += 1
            continue
        ta, tb = (p.read_text(encoding="utf-8").replace(str(p.parent), "OUT") for p in (a, b))
        if ta == tb:
            continue
        found: list[str] = []
        try:
            _walk(json.loads(ta), json.loads(tb), "", found)
        except json.JSONDecodeError:
            found = [f"text differs ({sum(x != y for x, y in zip(ta.splitlines(), tb.splitlines()))} lines)"]
        found = [f for f in found if not any(key in f for key in ignore)]
        if found:
            changed += 1
            print(f"{name}:")
            for line in found[:40]:
                print("   ", line)
    print(f"{len(names)} outputs, {changed} differ")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("write").add_argument("inputs", type=Path)
    r = sub.add_parser("report")
    r.add_argument("inputs", type=Path)
    r.add_argument("out", type=Path)
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--ignore", action="append", default=[], help="skip differences whose path contains this")
    d.add_argument("--common", action="store_true", help="only outputs present in both (a run in progress)")
    args = parser.parse_args()
    if args.cmd == "write":
        write(args.inputs)
    elif args.cmd == "report":
        args.out.mkdir(parents=True, exist_ok=True)
        report(args.inputs.resolve(), args.out.resolve())
    else:
        return diff(args.before, args.after, args.ignore, args.common)
    return 0


if __name__ == "__main__":
    sys.exit(main())
