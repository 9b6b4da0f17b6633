"""`ddp-doctor run --watch`: the watcher as a separate process of the launcher side.

The ranks are not touched (their stdout stays the terminal's): the launcher starts `ddp-doctor
watch RUN --plain` in its own session (a Ctrl-C in the terminal reaches the job, not the watcher,
which then sees the run end and prints its summary; a --stop-on SIGTERM to the launcher's group
never reaches it) with its output on the launcher's stderr — one line per change, since a redrawn
live view cannot share a terminal with another process's output. It also stops following if the
launcher is gone (`--until-pid`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from ddp_doctor.watch.actions import parse_stop_on

# After the command ended the watcher reads the last records and diagnoses once more; longer than
# this (a huge run on a slow disk) and it is stopped: `ddp-doctor report` gives the same answer.
FINISH_TIMEOUT_S = 120.0
INTERVAL_S = 1.0


def start_watcher(
    run_dir: Path, on_finding: str | None, alert_log: Path | None, stop_on: str | None
) -> subprocess.Popen[bytes] | None:
    """Start the watcher; ValueError for a --stop-on with an unknown finding ID; None (and a
    message) when it cannot start: the command runs anyway, unwatched."""
    parse_stop_on(stop_on)
    argv = [sys.executable, "-m", "ddp_doctor.cli", "watch", str(run_dir), "--plain"]
    argv += ["--until-pid", str(os.getpid()), "--interval", str(INTERVAL_S)]
    for flag, value in (("--on-finding", on_finding), ("--alert-log", alert_log), ("--stop-on", stop_on)):
        if value:
            argv += [flag, str(value)]
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), start_new_session=True
        )
    except OSError as exc:
        sys.stderr.write(f"ddp-doctor run: --watch: cannot start the watcher ({exc}); running unwatched\n")
        return None


def finish_watcher(child: subprocess.Popen[bytes]) -> None:
    """Let the watcher print its summary once the command has ended; stop it if it takes too long."""
    try:
        child.wait(timeout=FINISH_TIMEOUT_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        child.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)
        if child.poll() is None:
            child.kill()
