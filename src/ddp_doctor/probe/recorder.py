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
import json
import os
import stat
from pathlib import Path
from typing import Any

from ddp_doctor.rundir.records import ATTEMPTS_DIR, RANKS_DIR, check, rank_file
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
        # where the last line written lies in the file, [start, end) (the rollup index: rollup.py),
        # and the file's inode; the offset is counted from the file's size once the header is written
        self.last_span: tuple[int, int] | None = None
        self.ino: int | None = None
        self._offset = 0

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def open(self, rank: int, header: dict[str, Any]) -> None:
        path = rank_file(self.run_dir, rank)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # owner-only, as launcher.make_run_dir
        restart = header.get("restart")
        if isinstance(restart, int) and restart > 0:
            with contextlib.suppress(OSError):  # else this attempt appends, as before
                set_aside_earlier_attempt(self.run_dir, path, restart)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
        self.path = path
        os.write(self._fd, encode(header) + b"".join(self._early))
        self._early.clear()
        st = os.fstat(self._fd)
        self._offset, self.ino = st.st_size, st.st_ino

    def write(self, record: dict[str, Any]) -> None:
        line = encode(record)
        self.last_span = None
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
        self.last_span = (self._offset, self._offset + written)
        self._offset += written

    def _stop(self, error: OSError) -> None:
        """Stop writing for good after a failed write: a later write that succeeds (space freed)
        would leave a gap no reader could see. The rank file keeps every line written before."""
        self.error = f"{type(error).__name__}: {error}"
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def set_aside_earlier_attempt(run_dir: Path, path: Path, restart: int) -> Path | None:
    """Move the rank file an earlier torchrun attempt wrote at `path` to
    RUN/attempts/<its restart>/ranks/, so this attempt starts a file of its own.

    torchrun (`--max-restarts`) starts fresh worker processes with TORCHELASTIC_RESTART_COUNT + 1;
    they would append to the failed attempt's file, and the reader would keep the failed attempt's
    steps and drop the new ones as duplicates. Only this rank's process touches this file (the
    earlier attempt's workers were stopped before the restart). Nothing moves through a symlink:
    the file is checked with lstat and the attempts/ directories must be real directories.
    Returns the new path, or None when there was nothing (or nothing safe) to move.
    """
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, "rb") as f:
            first = f.readline(64 * 1024)
        old = json.loads(first).get("restart", 0)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(old, int) or isinstance(old, bool) or old >= restart:
        return None
    target = Path(run_dir) / ATTEMPTS_DIR / str(old) / RANKS_DIR
    for directory in (target.parent.parent, target.parent, target):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            return None
    dest = target / path.name
    if os.path.lexists(dest):
        return None
    os.rename(path, dest)
    return dest
