"""`ddp-doctor watch RUN_DIR`: diagnose a run while it runs (docs/watch.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ddp_doctor.cli_common import FailOn, fail

if TYPE_CHECKING:  # the command module stays light to import (`ddp-doctor --help`)
    from ddp_doctor.watch.follow import Watcher

INTERVAL_S = 2.0
HELP = (
    "Follow a run directory while the job runs: re-diagnose as records arrive, show the verdicts "
    "as they change (a live view on a terminal, one line per change otherwise), alert, and "
    "optionally stop the job. Exits when the run ends (exit code as `report --fail-on`).\n\n"
    "Example: ddp-doctor watch runs/a --stop-on nonfinite --alert-log runs/a-alerts.jsonl"
)


def register(app: typer.Typer) -> None:
    """Add `watch` to the root app."""
    app.command("watch", help=HELP)(watch)


# Options shared with `ddp-doctor run --watch` (launch/command.py): one definition each.
ON_FINDING = typer.Option(
    None,
    "--on-finding",
    metavar="CMD",
    help="Run CMD (through the shell) when a finding is confirmed or stops being confirmed, with "
    "the change as JSON on stdin.",
)
ALERT_LOG = typer.Option(
    None, "--alert-log", metavar="FILE", help="Append each finding change to FILE (JSON lines)."
)
STOP_ON = typer.Option(
    None,
    "--stop-on",
    metavar="ID[,ID...]|error",
    help="When one of these findings (error: any finding of severity error) is confirmed, write "
    "why into RUN/watch-stop.json and send SIGTERM to the launcher's process group.",
)


def watch(
    run_dir: Path = typer.Argument(..., help="Run directory of a job running, about to start, or ended."),
    interval: float = typer.Option(INTERVAL_S, "--interval", min=0.05, help="Seconds between refreshes."),
    fail_on: FailOn | None = typer.Option(
        None, "--fail-on", help="Exit 1 when, at the end, a confirmed finding is at least this severe."
    ),
    on_finding: str | None = ON_FINDING,
    alert_log: Path | None = ALERT_LOG,
    stop_on: str | None = STOP_ON,
    plain: bool = typer.Option(
        False, "--plain", help="One line per change even on a terminal (the default when stdout is not one)."
    ),
    until_pid: int | None = typer.Option(
        None, "--until-pid", hidden=True, help="Stop following when this process is gone (`run --watch`)."
    ),
) -> None:
    from ddp_doctor.watch.actions import Actions, parse_stop_on
    from ddp_doctor.watch.follow import Watcher

    if os.path.lexists(run_dir) and not run_dir.is_dir():  # a log file is for `report`; nothing to wait for
        fail(
            f"{run_dir}: not a directory (watch follows a run directory; `ddp-doctor report` reads logs)",
            command="watch",
        )
    try:
        stop_ids, stop_error = parse_stop_on(stop_on)
    except ValueError as exc:
        fail(str(exc), command="watch")
    if alert_log is not None:
        from ddp_doctor.core.safe_io import OutputError, check_destination

        try:
            check_destination(alert_log)
        except OutputError as exc:
            fail(str(exc), command="watch")
    actions = Actions(run_dir, on_finding, alert_log, stop_ids, stop_error)
    watcher = Watcher(run_dir, actions, fail_on.value if fail_on is not None else None)
    live = sys.stdout.isatty() and not plain
    code = follow(watcher, interval, live, until_pid)
    raise typer.Exit(code)


def follow(watcher: Watcher, interval: float, live: bool, until_pid: int | None = None) -> int:
    """Refresh until the run ends (or ``until_pid`` is gone, or Ctrl-C); return the exit code."""
    import time

    from rich.console import Console
    from rich.live import Live

    from ddp_doctor.core.terminal import safe
    from ddp_doctor.watch import view
    from ddp_doctor.watch.actions import alive

    out = sys.stdout
    waited, noted = False, 0  # the "waiting" line printed; the notes printed so far

    def step() -> bool:
        nonlocal waited, noted
        changes = watcher.refresh()
        if not live:
            if watcher.run is None and not waited:
                out.write(
                    safe(f"[watch] waiting for a run in {watcher.run_dir}: {watcher.tail.waiting}") + "\n"
                )
                out.flush()
                waited = True
            view.print_changes(changes, out)
            for note in watcher.actions.notes[noted:]:  # a stop, a failing alert: when it happens
                out.write(safe(f"[watch] {note}") + "\n")
            out.flush()
        noted = len(watcher.actions.notes)
        gone = until_pid is not None and not alive(until_pid)
        return watcher.ended or gone

    interrupted = False
    try:
        if live:
            console = Console(highlight=False)
            with Live(view.render(watcher), console=console, auto_refresh=False, transient=False) as screen:
                while True:
                    done = step()
                    screen.update(view.render(watcher), refresh=True)
                    if done:
                        break
                    time.sleep(interval)
        else:
            while not step():
                time.sleep(interval)
    except KeyboardInterrupt:
        interrupted = True
    code = 130 if interrupted else watcher.exit_code()
    for line in view.final_lines(watcher, code, notes=live):
        out.write(line + "\n")
    out.flush()
    return code
