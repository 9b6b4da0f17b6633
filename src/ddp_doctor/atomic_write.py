"""One way to write a file the tool produces: a temp file in the destination's directory, then
``os.replace`` over the destination.

Readers never see a half-written file, and a symlink planted at the destination is replaced itself,
never written through. A missing directory raises ``FileNotFoundError`` (an ``OSError``) before
anything is written; the temp file is removed on any failure.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_bytes_atomic(path: Path | str, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically; ``mode`` sets the permission bits (mkstemp's 0600 else)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".ddp-doctor-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    write_bytes_atomic(path, text.encode(encoding))
