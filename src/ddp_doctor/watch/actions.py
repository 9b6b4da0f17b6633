"""What the watcher does on a change: alerts (a user command, a JSON-lines log) and the opt-in stop.

Alerts fire on finding changes only (a finding confirmed, or a confirmed one that no longer is:
:meth:`Tracker.update`), once per finding ID and status change. ``--on-finding CMD`` runs CMD
through the shell with the change as one JSON object on stdin (Slack, a webhook or mail are a
``curl`` away; ddp-doctor has no network code); ``--alert-log FILE`` appends the same object as
one line. A failing or slow command is noted and never stops the watcher.

``--stop-on ID[,ID…]|error`` (never without the flag): when a listed finding (with ``error``: any
finding of severity error) is confirmed, the watcher writes RUN/watch-stop.json (who, when, why)
and then sends SIGTERM to the process group of every `ddp-doctor run` launcher of the run on this
host — what pressing Ctrl-C in its terminal does, with SIGTERM: the launcher forwards it,
torchrun stops its workers, and the launcher still writes the manifest's end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddp_doctor.core.findings import jsonable
from ddp_doctor.core.safe_io import PRIVATE_FILE, open_append, write_text
from ddp_doctor.rundir.records import CLAIM, WATCH_STOP
from ddp_doctor.watch.verdicts import Change

HOOK_TIMEOUT_S = 30.0  # an --on-finding command that takes longer is killed (and noted)


def parse_stop_on(value: str | None) -> tuple[frozenset[str], bool]:
    """``"nonfinite,loss-spike"`` / ``"error"`` → (finding IDs, stop on any error finding);
    ValueError for an ID the catalog does not know."""
    from ddp_doctor.core.catalog import FINDINGS

    if not value:
        return frozenset(), False
    items = {v.strip() for v in value.split(",") if v.strip()}
    unknown = sorted(i for i in items - {"error"} if i not in FINDINGS)
    if unknown:
        raise ValueError(f"--stop-on: unknown finding ID(s) {', '.join(unknown)} (see docs/catalog.md)")
    return frozenset(items - {"error"}), "error" in items


def alert_record(change: Change, run_dir: Path) -> dict[str, Any]:
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run": str(run_dir),
        **change.to_json(),
    }


@dataclass
class Actions:
    """The alert and stop settings of one watcher, and what it did."""

    run_dir: Path
    on_finding: str | None = None
    alert_log: Path | None = None
    stop_ids: frozenset[str] = frozenset()
    stop_on_error: bool = False
    notes: list[str] = field(default_factory=list)  # alerts that failed, the stop and whom it signalled
    stopped: dict[str, Any] | None = None

    def on_change(self, change: Change) -> None:
        if change.kind != "finding":
            return
        rec = jsonable(alert_record(change, self.run_dir))  # NaN/inf as strings: strict JSON for any reader
        line = json.dumps(rec, default=str, allow_nan=False)
        if self.alert_log is not None:
            try:
                with open_append(self.alert_log) as fh:  # O_NOFOLLOW: a planted symlink is refused
                    fh.write(line + "\n")
            except OSError as exc:
                self.notes.append(f"--alert-log {self.alert_log}: cannot write ({exc})")
        if self.on_finding:
            self._hook(line, change.id)
        if self.stopped is None and change.new == "confirmed" and self._stops(change):
            self.stop(change)

    def _stops(self, change: Change) -> bool:
        return change.id in self.stop_ids or (self.stop_on_error and change.severity == "error")

    def _hook(self, line: str, fid: str) -> None:
        assert self.on_finding is not None
        try:
            done = subprocess.run(
                self.on_finding,
                shell=True,  # the user's own command line, as typed (a pipe to curl, say)
                input=line + "\n",
                text=True,
                timeout=HOOK_TIMEOUT_S,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a stop's SIGTERM to the job never reaches it, nor it the job
            )
        except subprocess.TimeoutExpired:
            self.notes.append(f"--on-finding for {fid}: killed after {HOOK_TIMEOUT_S:g} s")
        except OSError as exc:
            self.notes.append(f"--on-finding for {fid}: cannot start ({exc})")
        else:
            if done.returncode != 0:
                self.notes.append(f"--on-finding for {fid}: exit code {done.returncode}")

    def stop(self, change: Change) -> None:
        """Write why into the run directory, then SIGTERM the launchers' process groups. With no
        launcher running on this host (the run already ended, or runs elsewhere) nothing is
        written: the run directory must never say it was stopped when it was not."""
        launchers = launcher_pids(self.run_dir)
        flag = ",".join(sorted(self.stop_ids) + (["error"] if self.stop_on_error else []))
        if not launchers:
            self.notes.append(
                f"--stop-on: {change.id} confirmed at step {change.step}, but no `ddp-doctor run` launcher "
                "of this run is running on this host (ended, or elsewhere): nothing stopped"
            )
            return
        self.stopped = {
            "by": "ddp-doctor watch",
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "stop_on": flag,
            "finding": change.id,
            "severity": change.severity,
            "step": change.step,
            "reason": f"finding {change.id} confirmed at step {change.step} (--stop-on {flag}): {change.summary}",
            "signalled": [],
        }
        try:  # the reason goes first: a report read after the job died says who stopped it and why
            write_text(
                self.run_dir / WATCH_STOP, json.dumps(self.stopped, indent=2) + "\n", mode=PRIVATE_FILE
            )
        except OSError as exc:
            self.notes.append(f"--stop-on: cannot write {WATCH_STOP} ({exc}); the job is stopped anyway")
        self.notes.append(f"--stop-on: stopping the job: {self.stopped['reason']}")
        for pid in launchers:
            self.stopped["signalled"].append(_terminate(pid, self.notes))
        with contextlib.suppress(OSError):  # whom it signalled (the first write already says why)
            write_text(
                self.run_dir / WATCH_STOP, json.dumps(self.stopped, indent=2) + "\n", mode=PRIVATE_FILE
            )


def launcher_pids(run_dir: Path) -> list[int]:
    """Pids of the live `ddp-doctor run` launchers of ``run_dir`` on this host, from their claim
    files (launch/claim.py: one per launcher, naming its host and pid)."""
    host, pids = socket.gethostname(), []
    with contextlib.suppress(OSError):
        for path in sorted(run_dir.glob(CLAIM + "*")):
            try:
                holder = json.loads(path.read_text())
                pid = int(holder["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if holder.get("host") == host and pid > 1 and alive(pid) and _is_ours(pid):
                pids.append(pid)
    return pids


def _is_ours(pid: int) -> bool:
    """Whether ``pid`` still runs ddp-doctor: a claim left by a launcher that was SIGKILLed names a
    pid the system may have given to an unrelated process since, which must not be signalled.
    Where /proc cannot tell (another OS), the claim is believed."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return not os.path.isdir("/proc/self")
    return b"ddp_doctor" in cmdline or b"ddp-doctor" in cmdline


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _terminate(pid: int, notes: list[str]) -> dict[str, Any]:
    """SIGTERM to ``pid``'s process group (the launcher, torchrun and the ranks); to ``pid`` alone
    when that group is ours (the watcher started in the same job as the launcher)."""
    try:
        pgid = os.getpgid(pid)
        if pgid == os.getpgrp():
            os.kill(pid, signal.SIGTERM)
            return {"pid": pid, "signal": "SIGTERM", "to": "process"}
        os.killpg(pgid, signal.SIGTERM)
        return {"pid": pid, "pgid": pgid, "signal": "SIGTERM", "to": "process group"}
    except OSError as exc:
        notes.append(f"--stop-on: cannot signal launcher pid {pid} ({exc})")
        return {"pid": pid, "error": str(exc)}
