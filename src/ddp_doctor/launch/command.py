"""`ddp-doctor run`: instrument a training command with zero code change (docs/probe.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from ddp_doctor.cli_common import LevelChoice, fail
from ddp_doctor.core.terminal import safe
from ddp_doctor.probe.interventions import help_text
from ddp_doctor.watch.command import ALERT_LOG, ON_FINDING, STOP_ON


def register(app: typer.Typer) -> None:
    """Add `run` to the root app."""
    app.command(
        "run",
        context_settings={"allow_interspersed_args": False},
        help="Run CMD with the probe in every rank and record a run directory.\n\n"
        "Example: ddp-doctor run --out runs/a -- torchrun --nproc_per_node 4 train.py",
    )(run_command)


def run_command(
    command: list[str] | None = typer.Argument(
        None,
        metavar="-- CMD [ARGS]...",
        help="The training command (python, torchrun, accelerate launch, ...).",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Run directory (default: ddp-doctor-runs/run-<UTC time>)."
    ),
    level_choice: LevelChoice = typer.Option(
        LevelChoice.basic,
        "--level",
        help="basic: counts, losses, norms, data, checksums; "
        "full: adds per-layer-group norms and Adam statistics every N steps.",
    ),
    every: int = typer.Option(
        50, "--every", min=1, help="Replica checksum (and `full` statistics) every N optimizer steps."
    ),
    fingerprints: int = typer.Option(
        0,
        "--fingerprints",
        min=0,
        metavar="K",
        help="Per-parameter fingerprints of every stage of the first K optimizer steps, for "
        "`ddp-doctor equiv`/`compare` (docs/equivalence.md); 0: off.",
    ),
    sets: list[str] | None = typer.Option(
        None,
        "--set",
        metavar="KEY=VALUE",
        help=help_text(),
    ),
    exports: list[str] | None = typer.Option(
        None,
        "--export",
        metavar="tensorboard[=DIR]|wandb",
        help="After the run, write its curves and findings to TensorBoard (default DIR: "
        "RUN/tensorboard) or W&B (docs/integrations.md). Repeatable.",
    ),
    watch: bool = typer.Option(
        False,
        "--watch",
        help="Diagnose while it runs: `ddp-doctor watch RUN` in a separate process beside the command, "
        "one line per change on stderr (docs/watch.md). Implied by the three options below.",
    ),
    on_finding: str | None = ON_FINDING,
    alert_log: Path | None = ALERT_LOG,
    stop_on: str | None = STOP_ON,
) -> None:
    import os

    from ddp_doctor.launch import launcher
    from ddp_doctor.launch.claim import RunDirBusy
    from ddp_doctor.probe.interventions import ENV_VAR, InterventionError, parse_sets, to_env
    from ddp_doctor.probe.options import LEVELS, ProbeOptions

    if not command:
        fail("no command given; usage: ddp-doctor run [OPTIONS] -- CMD [ARGS]...", command="run")
    level = level_choice.value
    if level not in LEVELS:
        fail(f"--level must be one of {', '.join(LEVELS)}, got {level!r}", command="run")
    from ddp_doctor.report.command import parse_export

    try:
        targets = [parse_export(e) for e in exports or []]
    except ValueError as error:
        fail(str(error), command="run")
    environ = dict(os.environ)
    if sets:
        try:
            environ[ENV_VAR] = to_env(parse_sets(sets))
        except InterventionError as error:
            fail(f"--set: {error}", command="run")
    run_dir = out if out is not None else launcher.default_run_dir()
    options = ProbeOptions(
        run_dir=run_dir.resolve(),
        level=level,  # type: ignore[arg-type]
        every=every,
        fingerprints=fingerprints,
    )
    typer.echo(f"ddp-doctor: recording to {safe(run_dir)}", err=True)
    watcher = None
    if watch or on_finding or alert_log or stop_on:
        from ddp_doctor.watch.spawn import start_watcher

        try:
            watcher = start_watcher(options.run_dir, on_finding, alert_log, stop_on)
        except ValueError as error:
            fail(str(error), command="run")
    try:  # claims the directory, then checks it holds no run yet: a second concurrent run stops
        code = launcher.run(list(command), options, environ=environ, require_fresh=True)
    except (RunDirBusy, OSError) as error:
        if watcher is not None:
            watcher.kill()  # it was waiting for a run that will not be recorded
        fail(str(error), command="run")
    if watcher is not None:
        from ddp_doctor.watch.spawn import finish_watcher

        finish_watcher(watcher)
    from ddp_doctor.launch.unreported import unreported_note
    from ddp_doctor.probe.launch_env import instance

    # one instance of several (a node's torchrun, a Slurm task) sees only its own ranks
    unreported = unreported_note(options.run_dir) if instance(list(command), environ)[0] is None else None
    if unreported is not None:
        typer.echo(f"ddp-doctor: WARNING: {safe(unreported)}", err=True)
    if code != 0:
        from ddp_doctor.analysis.failure import failure_info
        from ddp_doctor.rundir.teardown import classify_run

        status = classify_run(options.run_dir, code)
        if status.note is not None:
            typer.echo(f"ddp-doctor: {safe(status.note)}", err=True)
        failure = failure_info(status)
        if failure is not None:  # the report's first line, said right away
            typer.echo(f"ddp-doctor: {safe(failure['summary'])}", err=True)
    typer.echo(
        f"ddp-doctor: run directory {safe(run_dir)} (exit code {code}); next: ddp-doctor report {safe(run_dir)}",
        err=True,
    )
    if targets:
        _export(run_dir, targets)
    raise typer.Exit(code)


def _export(run_dir: Path, targets: list[tuple[str, Path | None]]) -> None:
    """`run --export`: diagnose the run just recorded and export it; a failure is reported, and the
    training command's exit code is passed through unchanged."""
    from ddp_doctor.report.command import export
    from ddp_doctor.report.export_tensorboard import ExportError
    from ddp_doctor.report.load import diagnose_path
    from ddp_doctor.rundir.reader import RunDirError

    try:
        diag = diagnose_path(run_dir)
    except RunDirError as error:
        typer.echo(f"ddp-doctor run: --export: nothing to export ({safe(error)})", err=True)
        return
    for target, where in targets:
        try:
            typer.echo(
                f"ddp-doctor: exported to {target}: {safe(export(diag, target, where, run_dir))}", err=True
            )
        except ExportError as error:
            typer.echo(f"ddp-doctor run: --export: {safe(error)}", err=True)
