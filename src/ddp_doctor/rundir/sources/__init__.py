"""Log sources: one module per format, each a :class:`~ddp_doctor.rundir.sources.base.Source`.

:data:`SOURCES` is the registry, in detection order (the first whose ``detect`` accepts a path
reads it): a ddp-doctor run directory, a HF ``trainer_state.json``, a W&B offline run,
TensorBoard event files (docs/import.md). A log source reads its format into a
:class:`~ddp_doctor.rundir.sources.series.LogSeries` and turns it into the in-memory run the
analysis reads (rundir/sources/logs.py), stating the fields it provides; nothing is written to disk.

Adding a format: one module here with its ``SOURCE``, one line in :data:`SOURCES`, docs/import.md,
a test. The source modules import only base, series and logs: never this registry.
"""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.rundir.reader import RunData
from ddp_doctor.rundir.sources import run_dir, tensorboard, trainer_state, wandb_offline
from ddp_doctor.rundir.sources.base import LogImportError, Source
from ddp_doctor.rundir.sources.series import ImportOptions, LogSeries

SOURCES: tuple[Source, ...] = (run_dir.SOURCE, trainer_state.SOURCE, wandb_offline.SOURCE, tensorboard.SOURCE)
TITLES = {s.name: s.title for s in SOURCES}

__all__ = ["SOURCES", "ImportOptions", "LogImportError", "LogSeries", "Source", "detect", "read", "source_of"]


def source_of(path: Path | str) -> Source | None:
    """The source that reads ``path``, or None (unknown). Never raises."""
    p = Path(path)
    for source in SOURCES:
        try:
            if source.detect(p):
                return source
        except OSError:  # Python 3.11: EACCES on a folder on the way raises from is_dir/is_file
            return None
    return None


def detect(path: Path | str) -> str | None:
    """The name of the source that reads ``path`` (``"rundir"``, ``"trainer_state"``, ...) or None."""
    source = source_of(path)
    return source.name if source else None


def read(path: Path | str, options: ImportOptions | None = None) -> RunData:
    """Read any supported path into run data; raise :class:`LogImportError` for what none reads."""
    p = Path(path)
    source = source_of(p)
    if source is None:
        logs = [s.accepts for s in SOURCES if s is not run_dir.SOURCE]
        raise LogImportError(
            f"{p}: not a run directory and no log ddp-doctor can import ({', '.join(logs[:-1])}, "
            f"or {logs[-1]}); see docs/import.md"
        )
    return source.read(p, options or ImportOptions())
