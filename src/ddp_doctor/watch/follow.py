"""The watcher: refresh, diagnose what is new, announce the changes, until the run ends.

One :class:`Watcher` per run directory. Each :meth:`Watcher.refresh` reads the new records
(:class:`~ddp_doctor.watch.tail.RunTail`) and, only when something was read, diagnoses the run
as accumulated in memory (:func:`diagnose_run`: the same checks as `report`, no file read again);
its changes go to the view and to the alerts. The run has ended when its manifest has an end and
a refresh read nothing more.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ddp_doctor.analysis.diagnose import Diagnosis, diagnose_run
from ddp_doctor.cli_common import ExitCode
from ddp_doctor.rundir.reader import RunData
from ddp_doctor.watch.actions import Actions
from ddp_doctor.watch.tail import RunTail
from ddp_doctor.watch.verdicts import Change, Tracker

DUTY = 0.25


@dataclass
class Watcher:
    run_dir: Path
    actions: Actions
    fail_on: str | None = None
    tail: RunTail = field(init=False)
    tracker: Tracker = field(default_factory=Tracker)
    run: RunData | None = None
    diag: Diagnosis | None = None
    refreshes: int = 0
    last_refresh_s: float = 0.0  # read + diagnose of the last refresh
    last_diagnose_s: float = 0.0
    _diagnosed_at: float = 0.0
    _stale: bool = False  # records read since the last diagnosis

    def __post_init__(self) -> None:
        self.tail = RunTail(self.run_dir)

    def refresh(self) -> list[Change]:
        """Read what is new; diagnose and return the changes when there was something."""
        start = time.perf_counter()
        self.refreshes += 1
        run = self.tail.refresh()
        if run is not None:
            self.run = run
            self._stale = self._stale or self.tail.changed or self.diag is None
        # a diagnosis costs more on a longer run: at most DUTY of the time goes to diagnosing
        # (a refresh in between only reads), except for the final one
        final = run is not None and not run.in_progress and self.tail.new_bytes == 0
        soon = start - self._diagnosed_at < self.last_diagnose_s / DUTY and not final
        if run is None or not self._stale or soon:
            self.last_refresh_s = time.perf_counter() - start
            return []
        t = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.diag = diagnose_run(run)
        except Exception as exc:  # noqa: BLE001 - the watcher outlives data the analysis cannot take
            self.actions.notes.append(
                f"diagnosis failed at this refresh ({type(exc).__name__}: {str(exc)[:200]})"
            )
            self._diagnosed_at, self._stale = t, False
            self.last_refresh_s = time.perf_counter() - start
            return []
        self.last_diagnose_s = time.perf_counter() - t
        self._diagnosed_at, self._stale = t, False
        changes = self.tracker.update(self.diag)
        for change in changes:
            self.actions.on_change(change)
        self.last_refresh_s = time.perf_counter() - start
        return changes

    @property
    def ended(self) -> bool:
        """The manifest has an end and the last refresh read nothing more (every line is in),
        and the run as finally read was diagnosed."""
        if self.run is None:  # a command that ended without writing a rank record
            return self.tail.manifest_ended
        return not self.run.in_progress and self.tail.new_bytes == 0 and not self._stale

    def exit_code(self) -> int:
        """As `report --fail-on` on the final diagnosis; 1 also when --stop-on stopped the job."""
        if self.actions.stopped is not None:
            return int(ExitCode.FINDINGS)
        if self.diag is None:
            return int(ExitCode.USAGE)  # the run ended without a rank record: nothing diagnosed
        if self.fail_on is not None:
            from ddp_doctor.report.load import failing

            if failing(self.diag, self.fail_on):
                return int(ExitCode.FINDINGS)
        return int(ExitCode.OK)
