"""Per-rank append-only JSON Lines writer (docs/run-format.md, "Crash safety").

Each record is serialised first and handed to the kernel with one `os.write` on an `O_APPEND`
descriptor, so a SIGKILL at any moment leaves every earlier line complete: data in the page cache
survives the death of the process. Nothing is buffered in user space once the file is open.

The file is opened lazily, on the first event that proves this process is a training rank
(process group created, model wrapped, backward or optimizer step). The torchrun agent, DataLoader
workers and helper processes import torch too, but never produce such an event, so they never
create a rank file. Records seen before that (e.g. a GradScaler built before the process group)
are held in memory and written right after the header.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from ddp_doctor.rundir.records import check, rank_file
from ddp_doctor.rundir.records import encode as _encode

# Records kept before the rank file exists; configuration events are few, so this only bounds
# memory in a process that builds objects in a loop without ever training.
MAX_EARLY_RECORDS = 1000


def encode(record: dict[str, Any]) -> bytes:
    """One checked record (ddp_doctor.rundir.records: declared kind and fields) as one JSON line."""
    return _encode(check(record))


class RankRecorder:
    """Writes one rank's records to RUN/ranks/rank-NNNNN.jsonl."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.path: Path | None = None
        self._fd: int | None = None
        self._early: list[bytes] = []
        self.error: str | None = None  # the write that failed (disk full), once one has

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def open(self, rank: int, header: dict[str, Any]) -> None:
        path = rank_file(self.run_dir, rank)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # owner-only, as launcher.make_run_dir
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
        self.path = path
        os.write(self._fd, encode(header) + b"".join(self._early))
        self._early.clear()

    def write(self, record: dict[str, Any]) -> None:
        line = encode(record)
        if self._fd is None:
            if len(self._early) < MAX_EARLY_RECORDS and self.error is None:
                self._early.append(line)
            return
        try:
            written = os.write(self._fd, line)
        except OSError as error:  # ENOSPC, EDQUOT, EIO: the file ends at its last whole line
            self._stop(error)
            raise
        if written < len(line):  # the disk filled up inside this line: cut it off, stop here
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            short = OSError(errno.ENOSPC, f"short write ({written} of {len(line)} bytes)")
            self._stop(short)
            raise short

    def _stop(self, error: OSError) -> None:
        """Stop writing for good after a failed write: a later write that succeeds (space freed)
        would leave a gap no reader could see. The rank file keeps every line written before."""
        self.error = f"{type(error).__name__}: {error}"
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
