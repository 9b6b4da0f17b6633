"""The trainer's own end-of-run summary (what it measured, before any diagnosis)."""

from __future__ import annotations

import statistics
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ddp_doctor.core.safe_io import write_text
from ddp_doctor.presets import get_preset
from ddp_doctor.trainer.config import METRICS_FILE, SUMMARY_FILE, TrainConfig
from ddp_doctor.trainer.data import entropy_floor
from ddp_doctor.trainer.loop import TrainResult


def print_summary(cfg: TrainConfig, result: TrainResult) -> None:
    """Print the summary table; with an out_dir, also save it as summary.txt (the demo shows it)."""
    console = Console(record=True)
    state, steps = result.state, result.steps
    table = Table(title="reference trainer: run summary", show_header=False)
    table.add_row(
        "model",
        f"{cfg.preset} ({get_preset(cfg.preset).num_parameters() / 1e6:.2f}M params, "
        f"{cfg.precision}, compile {cfg.compile})",
    )
    table.add_row("strategy", f"{cfg.strategy}, world size {state.world_size}")
    table.add_row(
        "effective batch",
        f"{cfg.micro_batch} x {cfg.accum} x {state.world_size} = "
        f"{cfg.micro_batch * cfg.accum * state.world_size} samples / step",
    )
    table.add_row("optimizer steps", f"{len(steps)} (epochs started: {state.epoch + 1})")
    table.add_row("faults", ", ".join(cfg.faults) or "none (healthy run)")
    if steps:
        table.add_row(
            "loss (global)",
            f"{steps[0].loss:.4f} -> {steps[-1].loss:.4f}  "
            f"(entropy floor {entropy_floor(cfg.seed):.4f} nats/token)",
        )
        if cfg.has("rank0-loss-log"):
            table.add_row(
                "loss (logged)", f"{steps[0].logged_loss:.4f} -> {steps[-1].logged_loss:.4f} (rank 0 only)"
            )
        table.add_row(
            "step time",
            f"{statistics.median(result.step_seconds):.3f} s median, {result.seconds:.1f} s total",
        )
        skipped = sum(s.skipped for s in steps)
        if state.scaler is not None:
            table.add_row("GradScaler", f"{skipped} skipped steps, final scale {steps[-1].loss_scale:g}")
    if cfg.out_dir is not None:
        table.add_row("metrics", str(Path(cfg.out_dir) / METRICS_FILE))
    console.print(table)
    if cfg.out_dir is not None:
        write_text(Path(cfg.out_dir) / SUMMARY_FILE, console.export_text())
