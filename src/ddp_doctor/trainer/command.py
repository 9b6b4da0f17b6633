"""`ddp-doctor demo` and `ddp-doctor train`: the reference trainer from the command line.

`demo` reproduces the forum setup (DDP on 4 ranks, micro-batch 2, accumulation 8, warmup) at tiny
scale on CPU with a realistic mix of pitfalls, and ends with the trainer's own summary. Nothing
heavy is imported here at module level, so `ddp-doctor --help` stays fast.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from ddp_doctor.trainer.config import TrainConfig

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
    """Add `demo` and `train` to the root app."""

    @app.command()
    def demo(
        clean: bool = typer.Option(False, "--clean", help="The healthy run: no faults."),
        fault: list[str] = typer.Option([], "--fault", help="Reproduce this pitfall (repeatable); "
                                        "replaces the default mix. See `ddp-doctor train --help`."),
        steps: int = typer.Option(DEMO_STEPS, "--steps", help="Optimizer steps."),
        world: int = typer.Option(DEMO_WORLD, "--world", help="Number of CPU ranks (torchrun)."),
        out: Path | None = typer.Option(None, "--out", help="Where metrics.jsonl and the log go "
                                        "(default: a new temporary directory)."),
    ) -> None:
        """Run the reference LLaMA trainer on CPU ranks with the forum's setup and its pitfalls."""
        from ddp_doctor.trainer.faults import FAULTS

        if clean and fault:
            raise typer.BadParameter("--clean and --fault exclude each other")
        unknown = [f for f in fault if f not in FAULTS]
        if unknown:
            raise typer.BadParameter(f"unknown fault(s) {', '.join(unknown)}; choose from "
                                     f"{', '.join(FAULTS)}", param_hint="--fault")
        faults = () if clean else tuple(fault) or DEMO_FAULTS
        out_dir = str(out) if out is not None else tempfile.mkdtemp(prefix="ddp-doctor-demo-")
        _launch(world, out_dir, steps=steps, faults=faults, lr=DEMO_LR, warmup_steps=DEMO_WARMUP,
                dataset_docs=DEMO_DOCS)

    @app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                                   "help_option_names": []})
    def train(
        ctx: typer.Context,
        world: int = typer.Option(1, "--world", help="Ranks (torchrun) — 1 runs in this process."),
    ) -> None:
        """Run the reference trainer; flags as `python -m ddp_doctor.trainer --help`."""
        from ddp_doctor.trainer.config import config_from_argv

        cfg = config_from_argv(list(ctx.args))
        if world == 1:
            from ddp_doctor.trainer.__main__ import main

            raise typer.Exit(main(list(ctx.args)))
        out_dir = cfg.out_dir or tempfile.mkdtemp(prefix="ddp-doctor-train-")
        _run(world, cfg, out_dir)


def _launch(world: int, out_dir: str, **fields: object) -> None:
    from ddp_doctor.trainer.config import TrainConfig

    cfg = TrainConfig(out_dir=out_dir, progress=False, **fields)  # type: ignore[arg-type]
    _run(world, cfg, out_dir)


def _run(world: int, cfg: TrainConfig, out_dir: str) -> None:
    from rich.console import Console

    from ddp_doctor.trainer.config import METRICS_FILE, SUMMARY_FILE, TrainConfig
    from ddp_doctor.trainer.launch import LOG_FILE, build_command, log_tail, run_command

    console = Console()
    if cfg.out_dir != out_dir or cfg.progress:
        cfg = TrainConfig(**{**vars(cfg), "out_dir": out_dir, "progress": False})
    command = build_command(cfg, world)
    console.print(f"[bold]ddp-doctor[/] reference trainer: {cfg.preset} LLaMA, {world} CPU ranks "
                  f"(gloo), micro-batch {cfg.micro_batch}, accumulation {cfg.accum}, "
                  f"faults: {', '.join(cfg.faults) or 'none'}")
    code = run_command(command, out_dir, cfg.steps, console)
    summary = Path(out_dir) / SUMMARY_FILE
    if code != 0 or not summary.exists():
        console.print(log_tail(out_dir), markup=False, highlight=False)
        console.print(f"[red]trainer failed (exit code {code})[/]; full log: {Path(out_dir) / LOG_FILE}")
        raise typer.Exit(code or 1)
    console.print(summary.read_text(encoding="utf-8"), markup=False, highlight=False, end="")
    console.print(f"metrics: {Path(out_dir) / METRICS_FILE}   launcher log: {Path(out_dir) / LOG_FILE}")
