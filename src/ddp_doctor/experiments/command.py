"""`ddp-doctor verify` and `ddp-doctor ablate`. Heavy imports happen inside the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ddp_doctor.cli_common import ExitCode, TextJson, check_output, fail, write_output
from ddp_doctor.core.terminal import safe

if TYPE_CHECKING:
    from ddp_doctor.experiments.ablate import Variant


def register(app: typer.Typer) -> None:
    """Add `verify` and `ablate` to the root app."""
    app.command("verify")(verify)
    app.command("ablate", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(ablate)


def verify(
    world: int = typer.Option(2, "--world", help="Number of gloo CPU ranks (>= 2)."),
    accum: int = typer.Option(2, "--accum", help="Micro-steps per optimizer step."),
    preset: str = typer.Option("tiny", "--preset", help="Model preset (tiny or small on CPU)."),
    steps: int = typer.Option(2, "--steps", help="Optimizer steps k before comparing."),
    seq_len: int = typer.Option(32, "--seq-len", help="Tokens per sample."),
    compile_row: bool = typer.Option(False, "--compile", help="Add compile vs eager (slow on CPU: ~1 min)."),
    only: list[str] | None = typer.Option(None, "--only", help="Run only this row (repeatable)."),
    fmt: TextJson = typer.Option(TextJson.text, "--format"),
    output: Path | None = typer.Option(None, "--output", help="Also write the JSON here."),
) -> None:
    """Measure on real gloo ranks that DDP, its knobs, ZeRO-1, FSDP2 (and compile) are equivalent.

    Exit 0 when every row is as expected (equivalent rows equal, known-broken rows different), 1 otherwise.
    """
    from rich.console import Console

    from ddp_doctor.experiments.render import verify_table
    from ddp_doctor.experiments.verify import VerifyConfig, run_verify

    check_output(output)
    try:
        cfg = VerifyConfig(
            world=world,
            accum=accum,
            preset=preset,
            steps=steps,
            seq_len=seq_len,
            compile=compile_row,
            only=tuple(only or ()),
        )
        result = run_verify(cfg)
    except ValueError as err:
        fail(str(err))
    data = json.dumps(result.to_json(), indent=1)
    if output is not None:
        write_output(output, data)
    if fmt is TextJson.json:
        typer.echo(data)
    else:
        verify_table(result, Console())
    raise typer.Exit(ExitCode.OK if result.ok else ExitCode.FINDINGS)


def ablate(
    ctx: typer.Context,
    seeds: int = typer.Option(3, "--seeds", help="Seeds per variant (the seed= intervention)."),
    variants: list[str] | None = typer.Option(
        None,
        "--variant",
        "--variants",
        help="One variant: KEY=VALUE, or several joined by ',' (repeatable). Default: the forum's suggestions.",
    ),
    jobs: int = typer.Option(1, "--jobs", help="Runs at the same time."),
    out: Path = typer.Option(Path("ddp-doctor-ablate"), "--out", help="Output directory (resumable)."),
    fmt: TextJson = typer.Option(TextJson.text, "--format"),
) -> None:
    """Run `-- CMD` as a baseline and with each intervention, K seeds each; rank what helped.

    Example: ddp-doctor ablate --seeds 3 --variant lr.scale=0.1 --variant clip=1.0 -- torchrun ... train.py
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ddp_doctor.experiments.ablate import DEFAULT_VARIANTS, parse_variants, plan_runs
    from ddp_doctor.experiments.ablate import ablate as run_ablate
    from ddp_doctor.experiments.render import ablate_table
    from ddp_doctor.probe.interventions import InterventionError

    command = list(ctx.args)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        fail("give the training command after --")
    try:
        parsed = parse_variants(variants or list(DEFAULT_VARIANTS))
    except InterventionError as err:
        fail(str(err))
    if seeds < 1 or jobs < 1:
        fail("--seeds and --jobs must be >= 1")
    console = Console(stderr=fmt is TextJson.json)
    total = len(plan_runs(out, parsed, seeds))
    with Progress(
        TextColumn("ablate"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("", total=total)

        def done(variant: Variant, seed: int, skipped: bool) -> None:
            note = "done before" if skipped else "finished"
            progress.update(task, advance=1, description=escape(safe(f"{variant.name} seed {seed} {note}")))

        try:
            result = run_ablate(command, out, parsed, seeds, jobs=jobs, on_done=done)
        except ValueError as err:
            progress.stop()
            fail(str(err))
    if fmt is TextJson.json:
        typer.echo(json.dumps(result.to_json(), indent=1))
    else:
        ablate_table(result, console)
        console.print(f"run directories and ablate.json in {safe(out)}", markup=False)
