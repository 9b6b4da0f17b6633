"""Read a source file the way Python would, without ever blocking on a special file."""

from __future__ import annotations

import codecs
import io
import os
import stat
import tokenize
from pathlib import Path


def read_source(path: Path) -> tuple[str, str]:
    """``(text, encoding)`` of a regular file; raises OSError/ValueError with a clear reason.

    Never opens anything but a regular file (a FIFO would block the run forever). Python files
    are decoded as Python does: a UTF-8 BOM, else a PEP 263 ``# coding:`` line, else UTF-8.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file (FIFO, socket or device): skipped")
    raw = path.read_bytes()
    encoding = "utf-8-sig" if raw.startswith(codecs.BOM_UTF8) else "utf-8"
    if path.suffix != ".ipynb":  # notebooks are JSON: always UTF-8
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:  # unknown codec, or a BOM that contradicts the cookie
            raise ValueError(f"bad encoding declaration: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    try:
        return raw.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid {encoding}: {exc.reason}") from None
