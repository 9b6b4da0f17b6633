"""The one way ddp-doctor writes a file: a temp file in the same directory, renamed over the target.

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
