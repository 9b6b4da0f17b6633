"""The one way ddp-doctor writes a file: a temp file in the same directory, renamed over the target;
and the one way it reads one it did not just create (:func:`read_regular`, :func:`open_regular`).

Why: a reader never sees half a file (an interrupted write leaves the old file or nothing), and a
symlink planted at the destination is *replaced*, never followed — writing `report.html` can
not overwrite whatever the link points to. A destination that cannot be written (a missing
directory, a directory in its place, a read-only file) raises :class:`OutputError` with a
message for the user; the CLI turns it into exit code 2.

Used for every whole file the tool writes: report outputs and exports, `compare/plan/verify/ablate
--output`, `lint --fix`, manifests, the rank-file Arrow cache, imported runs, demo and integration
outputs, generated docs. Files that must not exist yet (claims, launcher failure reports) are
created with :func:`create_new` (O_EXCL|O_NOFOLLOW). Records appended while training runs (rank
files, trainer metrics, logged losses, launcher logs) are streams opened with O_NOFOLLOW (recorder.py,
:func:`open_append`, :func:`open_log`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TextIO

# Run directories hold commands, hosts and losses: their files are the owner's only (docs/run-format.md).
PRIVATE_FILE = 0o600


class OutputError(OSError):
    """The destination cannot be written; the message says why, for the user."""


def check_destination(path: str | os.PathLike[str]) -> Path:
    """Validate where a file will go before any work is done (for `--output`); returns the path."""
    target = Path(path)
    parent = target.parent
    if not parent.exists():
        raise OutputError(f"cannot write {target}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"cannot write {target}: {parent} is not a directory")
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return target
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write {target}: it is a directory; give a file name")
    # The mode bits, not only access(): root may write anything, but a file marked read-only is
    # the user saying "do not change this".
    if stat.S_ISREG(st.st_mode) and (
        not st.st_mode & 0o222 or not os.access(target, os.W_OK, follow_symlinks=False)
    ):
        raise OutputError(f"cannot write {target}: the file is read-only")
    return target


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_with(
    path: str | os.PathLike[str], produce: Callable[[BinaryIO], object], *, mode: int | None = None
) -> None:
    """Atomically replace ``path`` by what ``produce`` writes into the (binary) temp file.

    ``mode``: permission bits of the new file; by default those of the regular file it replaces
    (a symlink's target is not consulted), else 0666 minus the umask, as a plain ``open`` would.
    """
    target = check_destination(path)
    if mode is None:
        try:
            st = os.lstat(target)
            mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else _default_mode()
        except FileNotFoundError:
            mode = _default_mode()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            produce(f)
            f.flush()
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, target)  # replaces a symlink itself, never its target
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> None:
    """Atomically replace ``path`` by ``data`` (see :func:`write_with` for ``mode``)."""
    write_with(path, lambda f: f.write(data), mode=mode)


def write_text(
    path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8", mode: int | None = None
) -> None:
    """:func:`write_bytes` for text; line endings are written exactly as they are in ``text``."""
    write_bytes(path, text.encode(encoding), mode=mode)


def ensure_private_dir(path: str | os.PathLike[str]) -> bool:
    """Make ``path`` a directory of ours (mode 0700) if it does not exist; True when it is a real
    directory now, False for a symlink, a file in its place, or a parent not ours to write (caches
    are optional: the caller goes on without one)."""
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, mode=0o700)
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def create_new(path: str | os.PathLike[str], data: bytes = b"", *, mode: int = PRIVATE_FILE) -> None:
    """Create ``path``, which must not exist yet (``FileExistsError`` otherwise, also for a symlink
    planted there: O_EXCL never follows one), and write ``data``: claims and one-off records."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def open_append(path: str | os.PathLike[str]) -> TextIO:
    """Open a record stream for appending (metrics.jsonl, a logged-loss file): O_NOFOLLOW, so a
    symlink planted there raises ``OSError`` instead of being written through; private when new."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, PRIVATE_FILE), "a", encoding="utf-8")


def open_log(path: str | os.PathLike[str]) -> TextIO:
    """Open a log the tool streams into (a launcher's output) for writing from the start: a
    symlink planted there is removed, never written through (O_NOFOLLOW), and the file is private."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, PRIVATE_FILE), "w", encoding="utf-8")


# --- the one safe reader: regular files only, never through a symlink, never past the size at open ---


def data_end(fd: int, size: int) -> int:
    """Where the last written data of a file ends: a hole at the end (a file preallocated or
    extended and never written, e.g. by a crash) is not data, and reading it would cost memory for
    bytes that are not there. File systems without hole support report no hole."""
    end, off = 0, 0
    try:
        while off < size:
            start = os.lseek(fd, off, os.SEEK_DATA)
            off = end = os.lseek(fd, start, os.SEEK_HOLE)
    except OSError as exc:  # ENXIO: no data after `off` (none at all: end 0); else unsupported
        end = end if exc.errno == errno.ENXIO else size
    except AttributeError:  # no SEEK_DATA on this platform
        end = size
    finally:
        os.lseek(fd, 0, os.SEEK_SET)  # the seeks above moved the offset the reads start from
    return min(end, size)


def read_regular(path: Path, limit: int | None = None, holes: list[int] | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file (not a symlink, FIFO, device or directory).

    Raises OSError with a readable message otherwise. O_NONBLOCK: opening a FIFO never blocks;
    O_NOFOLLOW: a symlink (or a symlink loop) is refused. Reads at most the size at open time
    (and at most ``limit`` bytes), so a file that grows while we read it cannot keep us reading.
    A hole at the end of the file is not read; its size is appended to ``holes`` when given.
    """
    fd, st = open_regular(path)
    try:
        size = st.st_size if limit is None else min(st.st_size, limit)
        if st.st_blocks * 512 < size:  # sparse: stop where the written data ends
            end = data_end(fd, size)
            if end < size and holes is not None:
                holes.append(size - end)
            size = end
        return read_fd(fd, size)
    finally:
        os.close(fd)


def read_fd(fd: int, size: int, offset: int | None = None) -> bytes:
    """Up to ``size`` bytes of ``fd`` from its position (or from ``offset``, by pread), fewer only
    where the file ends first: a file that grows meanwhile cannot keep us reading."""
    chunks, got = [], 0
    while got < size:
        want = size - got  # usually one read, one buffer
        b = os.read(fd, want) if offset is None else os.pread(fd, want, offset + got)
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """An open descriptor of ``path`` and its stat, if it is a regular file (see read_regular)."""
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise OSError(f"{path.name} is a symlink (not followed)") from exc
        raise OSError(f"{path.name}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st
