"""A run directory written by `ddp-doctor run` (docs/run-format.md): read by the reader itself."""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.rundir.reader import MANIFEST, RANKS_DIR, RunData, read_run
from ddp_doctor.rundir.sources.base import Source
from ddp_doctor.rundir.sources.series import ImportOptions


def _detect(path: Path) -> bool:
    return path.is_dir() and ((path / MANIFEST).exists() or (path / RANKS_DIR).is_dir())


def _read(path: Path, options: ImportOptions) -> RunData:
    return read_run(path, rollups=options.rollups, steps=options.steps)


SOURCE = Source(
    name="rundir",
    title="ddp-doctor run directory",
    accepts="a run directory written by `ddp-doctor run`",
    detect=_detect,
    read=_read,
)
