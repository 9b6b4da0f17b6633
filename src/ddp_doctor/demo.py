"""`ddp-doctor demo`: the reference trainer under the probe, then the diagnosis.

It reproduces the forum setup (DDP on 4 ranks, micro-batch 2, accumulation 8, warmup) at tiny
scale on CPU with a realistic mix of pitfalls, under the probe (`ddp-doctor run`), and ends with
the trainer's own summary and the diagnosis (text, plus an HTML report in the run directory).
The demo sits above every stage it strings together (trainer, probe, analysis, report), so it is
its own module rather than part of any of them. Nothing heavy is imported at module level, so
`ddp-doctor --help` stays fast.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ddp_doctor.core.terminal import safe

if TYPE_CHECKING:
    from rich.console import Console

# The default demo: three mistakes from the forum thread that the runtime probe can measure
# (catalog: scheduler-per-microstep, set-epoch-missing, loss-normalization-variable-tokens) — the
# scheduler steps per micro-batch (warmup and decay run 8x too fast), the sampler's order repeats
# every epoch, and each micro-batch's loss is its own token mean (the Hugging Face default before
# num_items_in_batch). rank0-loss-log is not in the mix: the catalog finds it by lint only.
DEMO_FAULTS: tuple[str, ...] = ("sched-per-micro", "no-set-epoch", "per-microbatch-mean-loss")
DEMO_WORLD = 4
# 30 optimizer steps of 64 samples over 256 documents: 7.5 epochs (so a repeated order shows).
# Measured (docs/trainer.md): 0.7-2.0 s per step on 2 cores shared with other jobs, plus 20-35 s of
# torchrun + import start-up: 45 s idle, about 95 s at load average 12 (40 steps took 2m14s).
DEMO_STEPS = 30
DEMO_DOCS = 256
DEMO_WARMUP = 4
# lr for the tiny model on this step budget: the healthy loss falls visibly (5.57 -> 2.65 in 40
# steps; 3e-4, the TrainConfig default, barely moves it).
DEMO_LR = 1e-3


def register(app: typer.Typer) -> None:
    """Add `demo` to the root app."""
    app.command("demo")(demo)


def demo(
    clean: bool = typer.Option(False, "--clean", help="The healthy run: no faults."),
    fault: list[str] = typer.Option(
        [],
        "--fault",
        help="Reproduce this pitfall (repeatable); replaces the default mix. See `ddp-doctor train --help`.",
    ),
    steps: int = typer.Option(DEMO_STEPS, "--steps", help="Optimizer steps."),
    world: int = typer.Option(DEMO_WORLD, "--world", help="Number of CPU ranks (torchrun)."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="The run directory (probe records, trainer/metrics.jsonl, report.html; "
        "default: a new temporary directory).",
    ),
    compare: bool = typer.Option(
        False,
        "--compare",
        help="Run the same setup once on 1 rank and once on --world ranks, then "
        "`ddp-doctor compare` them (OUT/one-rank, OUT/N-ranks, OUT/compare.html).",
    ),
) -> None:
    """Run the reference LLaMA trainer on CPU ranks with the forum's setup and its pitfalls."""
    from ddp_doctor.trainer.faults import FAULTS

    if clean and fault:
        raise typer.BadParameter("--clean and --fault exclude each other")
    unknown = [f for f in fault if f not in FAULTS]
    if unknown:
        raise typer.BadParameter(
            f"unknown fault(s) {', '.join(unknown)}; choose from {', '.join(FAULTS)}",
            param_hint="--fault",
        )
    faults = () if clean else tuple(fault) or DEMO_FAULTS
    if out is not None and (out / "manifest.json").exists():
        raise typer.BadParameter(f"{out} already holds a run; choose another", param_hint="--out")
    out_dir = str(out) if out is not None else tempfile.mkdtemp(prefix="ddp-doctor-demo-")
    if compare:
        _compare_demo(world, out_dir, steps=steps, faults=faults)
        return
    _launch(
        world,
        out_dir,
        steps=steps,
        faults=faults,
        lr=DEMO_LR,
        warmup_steps=DEMO_WARMUP,
        dataset_docs=DEMO_DOCS,
    )


def _launch(world: int, out_dir: str, **fields: object) -> None:
    """The trainer under the probe (`ddp-doctor run`), then the report in text and HTML."""
    from ddp_doctor.analysis.diagnose import diagnose
    from ddp_doctor.report.command import write_report
    from ddp_doctor.report.console import report_console
    from ddp_doctor.report.text import render_console
    from ddp_doctor.rundir.records import TRAINER_DIR
    from ddp_doctor.trainer.launch import completion, print_outcome

    console = report_console()
    run_dir = Path(out_dir).resolve()
    code = _probe_run(world, run_dir, console, **fields)
    steps = int(fields.get("steps", 0))  # type: ignore[call-overload]
    status = completion(str(run_dir / TRAINER_DIR), code, steps, run_dir=run_dir)
    print_outcome(console, str(run_dir / TRAINER_DIR), code, status.note if status.ok else None)
    console.rule("[bold]ddp-doctor report")
    render_console(diagnose(run_dir), console, "en")
    html = run_dir / "report.html"
    write_report(run_dir, "html", html)
    console.print(
        f"run directory: {safe(run_dir)}\nHTML report:   {safe(html)}\n"
        f"again:         ddp-doctor report {safe(run_dir)} [--format json|html] [--lang zh]",
        markup=False,
    )
    if not status.ok:
        raise typer.Exit(code)


def _probe_run(world: int, run_dir: Path, console: Console, **fields: object) -> int:
    """The reference trainer on `world` ranks under the probe; returns the launcher's exit code.

    The trainer's own metrics go beside the probe's rank files (docs/run-format.md), so the report
    can compare what the script logged with what the ranks computed."""
    from ddp_doctor.launch import launcher
    from ddp_doctor.probe.options import ProbeOptions
    from ddp_doctor.rundir.records import TRAINER_DIR
    from ddp_doctor.trainer.config import TrainConfig
    from ddp_doctor.trainer.launch import LaunchCommand, announce, build_command, run_command

    trainer_dir = str(run_dir / TRAINER_DIR)
    cfg = TrainConfig(out_dir=trainer_dir, progress=False, **fields)  # type: ignore[arg-type]
    command = build_command(cfg, world)
    announce(console, cfg, world)
    return launcher.run(
        command.argv,
        ProbeOptions(run_dir=run_dir),
        environ=command.env,
        runner=lambda argv, env: run_command(LaunchCommand(argv, env), trainer_dir, cfg.steps, console),
    )


def _compare_demo(world: int, out_dir: str, steps: int, faults: tuple[str, ...]) -> None:
    """`demo --compare`: the forum's setup on 1 rank ("one GPU was fine") and on `world` ranks, the
    same script and flags, then the comparison of the two runs aligned by samples consumed."""
    from ddp_doctor.analysis.diagnose import diagnose
    from ddp_doctor.compare.analysis import compare
    from ddp_doctor.compare.render import render_html, render_text
    from ddp_doctor.core.safe_io import write_text
    from ddp_doctor.report.console import report_console
    from ddp_doctor.rundir.records import TRAINER_DIR
    from ddp_doctor.trainer.config import TrainConfig
    from ddp_doctor.trainer.launch import completion

    console = report_console()
    base = Path(out_dir).resolve()
    fields = dict(steps=steps, faults=faults, lr=DEMO_LR, warmup_steps=DEMO_WARMUP, dataset_docs=DEMO_DOCS)
    runs = (base / "one-rank", base / f"{world}-ranks")
    codes = [_probe_run(1, runs[0], console, **fields), _probe_run(world, runs[1], console, **fields)]
    cfg = TrainConfig()
    # one process has no DDP wrapper to count samples on: its global batch is micro-batch × accumulation
    c = compare(
        diagnose(runs[0]),
        diagnose(runs[1]),
        ("1 rank", f"{world} ranks"),
        (cfg.micro_batch * cfg.accum, None),
    )
    console.rule("[bold]ddp-doctor compare")
    console.print(render_text(c), markup=False, highlight=False, end="")
    html = base / "compare.html"
    write_text(html, render_html(c))
    console.print(
        f"runs: {safe(runs[0])}  {safe(runs[1])}\nHTML: {safe(html)}\n"
        f"again: ddp-doctor compare {safe(runs[0])} {safe(runs[1])} [--format json|html] [--lang zh]",
        markup=False,
    )
    # a rank's teardown abort after complete training is not a failure (ddp_doctor.rundir.teardown)
    failed = [c for r, c in zip(runs, codes) if not completion(str(r / TRAINER_DIR), c, steps, run_dir=r).ok]
    if failed:
        raise typer.Exit(failed[0])
