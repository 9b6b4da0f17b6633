"""`ddp-doctor train`: the reference trainer from the command line (`ddp-doctor demo` runs it under
the probe: :mod:`ddp_doctor.demo`). Nothing heavy is imported here at module level, so
`ddp-doctor --help` stays fast.
"""

from __future__ import annotations

import tempfile

import typer


def register(app: typer.Typer) -> None:
    """Add `train` to the root app."""
    app.command(
        "train",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    )(train)


def train(
    ctx: typer.Context,
    world: int = typer.Option(1, "--world", help="Ranks (torchrun) — 1 runs in this process."),
) -> None:
    """Run the reference trainer; flags as `python -m ddp_doctor.trainer --help`."""
    from rich.console import Console

    from ddp_doctor.trainer.config import TrainConfig, config_from_argv
    from ddp_doctor.trainer.launch import announce, build_command, completion, print_outcome, run_command

    cfg = config_from_argv(list(ctx.args))
    if world == 1:
        from ddp_doctor.trainer.__main__ import main

        raise typer.Exit(main(list(ctx.args)))
    out_dir = cfg.out_dir or tempfile.mkdtemp(prefix="ddp-doctor-train-")
    console = Console()
    if cfg.out_dir != out_dir or cfg.progress:
        cfg = TrainConfig(**{**vars(cfg), "out_dir": out_dir, "progress": False})
    announce(console, cfg, world)
    code = run_command(build_command(cfg, world), out_dir, cfg.steps, console)
    status = completion(out_dir, code, cfg.steps)
    print_outcome(console, out_dir, code, status.note if status.ok else None)
    if not status.ok:
        raise typer.Exit(code)
