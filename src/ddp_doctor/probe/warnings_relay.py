"""Warnings raised through the probe's wrappers name the program's line, not ours.

A patched function (state.patch) puts one frame of ours between the caller and torch. A torch
warning with `stacklevel=2` ("the caller's line": `GradScaler` "CUDA is not available",
`F.mse_loss` "target size ... different to the input size") then points at
`ddp_doctor/probe/instruments/scaler.py` or `lossfn.py` instead of the user's line (issue 22,
nanochat). `install()` wraps `warnings.showwarning` once: a warning whose location is a file of
this package is shown at the first frame above our frames on the live stack (the line it would
name without the probe); every other warning passes through untouched.

It changes where a warning is shown, never whether: filters and the "once per location"
registry have already been applied by then, with our wrapper's line as the location (so a
warning repeated from several user lines through one wrapper is shown once rather than once per
line). Zero cost per call; if anything here fails, the warning is shown as it came.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TAG = "__ddp_doctor_relay__"


def _ours(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


def caller_outside(filename: str, lineno: int) -> tuple[str, int] | None:
    """(file, line) of the first frame above our frame at `filename:lineno`, outside this package."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_filename == filename and frame.f_lineno == lineno):
        frame = frame.f_back
    while frame is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    return frame.f_code.co_filename, frame.f_lineno


def install() -> None:
    """Idempotent; chains to whatever `warnings.showwarning` was when the probe started."""
    previous = warnings.showwarning
    if getattr(previous, _TAG, False):
        return

    def showwarning(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        try:
            if _ours(filename):
                where = caller_outside(filename, lineno)
                if where is not None:
                    filename, lineno = where
                    line = None  # read again from the program's file
        except Exception:  # noqa: BLE001, S110 - show the warning as it came
            pass
        previous(message, category, filename, lineno, file, line)

    setattr(showwarning, _TAG, True)
    warnings.showwarning = showwarning
