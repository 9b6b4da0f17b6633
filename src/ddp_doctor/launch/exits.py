"""How each failed rank exited, as the launcher saw it: `launcher/exits-<host>-<pid>.json`.

A rank that aborts at interpreter teardown (the torch/gloo race, docs/probe.md) cannot record
that itself: it dies after its `end` record. Its parent can. torchrun (and `accelerate launch`,
which runs torchrun's elastic agent) raises `ChildFailedError(name, failures)` once workers
failed, with one `ProcessFailure` (pid, exitcode, negative for a signal) per failed global rank.
In launcher processes the sitecustomize shim wraps that constructor, so each failure report is
written to the directory in DDP_DOCTOR_EXITS_DIR (`ddp-doctor run`: RUN/launcher/; the reference
trainer: its out dir) before torchrun prints it:

    {"host": "...", "pid": 123, "time": 1.7e9, "name": "train.py",
     "failures": {"2": {"exitcode": -6, "signal": "SIGABRT", "pid": 456, "local_rank": 2}}}

Nothing here runs unless a worker failed, and nothing may raise into the launcher.
Kept free of torch imports at module level (the shim imports it in every launcher process).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from ddp_doctor.rundir.teardown import signal_name

ENV_EXITS_DIR = "DDP_DOCTOR_EXITS_DIR"
ERRORS_MODULE = "torch.distributed.elastic.multiprocessing.errors"


def _failures(failures: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for rank, failure in dict(failures).items():
        code = int(getattr(failure, "exitcode", 0))
        out[str(int(rank))] = {
            "exitcode": code,
            "signal": signal_name(code),
            "pid": getattr(failure, "pid", None),
            "local_rank": getattr(failure, "local_rank", None),
        }
    return out


def write_failures(directory: Path, name: Any, failures: Any) -> Path:
    """Write one failure report (a new file, never over an existing one or through a symlink)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"exits-{socket.gethostname()}-{os.getpid()}-{time.time_ns()}.json"
    record = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "time": time.time(),
        "name": str(name),
        "failures": _failures(failures),
    }
    from ddp_doctor.core.safe_io import create_new

    create_new(path, json.dumps(record).encode("utf-8"))
    return path


def install() -> None:
    """Wrap ChildFailedError.__init__ (called by the shim once the errors module is imported)."""
    import importlib

    errors = importlib.import_module(ERRORS_MODULE)
    cls = errors.ChildFailedError
    original = cls.__init__
    if getattr(original, "__ddp_doctor_original__", None) is not None:
        return
    directory = Path(os.environ[ENV_EXITS_DIR])

    def __init__(self: Any, name: Any, failures: Any, *args: Any, **kwargs: Any) -> None:
        original(self, name, failures, *args, **kwargs)
        with contextlib.suppress(Exception):  # the launcher's own error report must go on
            write_failures(directory, name, failures)

    __init__.__ddp_doctor_original__ = original  # type: ignore[attr-defined]
    cls.__init__ = __init__
