"""What a log source is: a name, how to recognise its path, how to read it into a run.

Each format is one module of this package holding one :class:`Source`; the registry
(``rundir/sources/__init__.py``) lists them in detection order. A source's ``read`` returns the
in-memory :class:`~ddp_doctor.rundir.reader.RunData` the analysis reads; a log source also states
which fields it provides (the manifest's ``imported.fields``), and the analysis reports only the
findings those fields can feed (analysis/reduced.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ddp_doctor.rundir.reader import RunDirError

if TYPE_CHECKING:
    from ddp_doctor.rundir.reader import RunData
    from ddp_doctor.rundir.sources.series import ImportOptions


class LogImportError(RunDirError):
    """The path is no log we can read (or its reader library is not installed); the message says which.

    A :class:`RunDirError`: callers that report "not a run" handle both the same way."""


@dataclass(frozen=True)
class Source:
    name: str  # the manifest's `imported.source` ("trainer_state", ...; "rundir" for a run directory)
    title: str  # for people: "HF trainer_state.json" (the report's "not measured from ..." texts)
    # what the user may pass, for the "no log ddp-doctor can import" message
    accepts: str
    detect: Callable[[Path], bool]  # never raises; may be called on any path
    read: Callable[[Path, ImportOptions], RunData]  # raises LogImportError / RunDirError
