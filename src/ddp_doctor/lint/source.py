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
        except SyntaxError as exc:  # no cookie and not UTF-8, an unknown codec, or BOM vs cookie
            if "missing" not in str(exc):
                raise ValueError(f"bad encoding declaration: {exc.msg}") from None
            encoding = "utf-8"  # undeclared: the decode below says where it is not UTF-8
    try:
        return raw.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        hint = "" if encoding != "utf-8" else " (declare the encoding with a PEP 263 `# coding:` line)"
        raise ValueError(f"not valid {encoding}: {exc.reason}{hint}") from None
