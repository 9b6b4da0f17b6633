"""Logs the user already has → a reduced run directory the analysis reads unchanged.

Sources (docs/import.md): a HF ``trainer_state.json``, TensorBoard event files or log dirs, a W&B
offline run dir. Each reader returns a :class:`~ddp_doctor.importers.series.LogSeries` (named
scalar series by step); :func:`~ddp_doctor.importers.reduced.write_reduced_run` writes it in the
run-directory format with an ``imported`` block in the manifest, and the analysis then reports
only the findings those fields support (``analysis/reduced.py``).

Nothing here imports torch or the analysis.
"""

from __future__ import annotations

from ddp_doctor.importers.detect import LogImportError, detect, read_log
from ddp_doctor.importers.reduced import reduced_run, write_reduced_run
from ddp_doctor.importers.series import ImportOptions, LogSeries

__all__ = [
    "LogImportError",
    "ImportOptions",
    "LogSeries",
    "detect",
    "read_log",
    "reduced_run",
    "write_reduced_run",
]
