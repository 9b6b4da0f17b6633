"""Read and parse a source file the way Python would, without ever blocking on a special file."""

from __future__ import annotations

import ast
import codecs
import io
import os
import re
import stat
import sys
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


def read_text(path: Path, cap: int) -> str | None:
    """The text of a regular file of at most ``cap`` bytes (configurations, launch scripts, notes),
    undecodable bytes replaced; None for anything else. Only a regular file is opened (a link to
    /dev/zero or a FIFO would never end), and no more than the cap is read, even if it grew."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
            return None
        with path.open("rb") as f:
            return f.read(cap + 1).decode("utf-8", errors="replace")
    except OSError:
        return None


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``; on Python before 3.12 also code written for 3.12's f-strings (PEP 701), which
    may reuse the outer quote inside a replacement field (``f"{cfg["lr"]}"``, common in code written
    since 2024): those inner strings get the other kind of quote, which keeps every line and column
    where it was, and the copy is parsed. Raises the original SyntaxError when that does not help."""
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        if sys.version_info >= (3, 12) or "f-string" not in (exc.msg or ""):
            raise
        try:
            requoted = requote_fstrings(source)
        except _Unfixable:
            raise exc from None
        if requoted == source:
            raise
        try:
            return ast.parse(requoted, filename=filename)
        except SyntaxError:
            raise exc from None


class _Unfixable(Exception):
    """The source has a PEP 701 form with no pre-3.12 spelling (every quote kind already taken,
    a comment or backslash in a field, fields nested too deep) or is not valid Python."""


_STRING_START = re.compile(r"(?:[rRbBuUfF]|[rR][bBfF]|[bBfF][rR])?(?:\'\'\'|\"\"\"|'|\")")
_QUOTES = ("'", '"')
_MAX_NESTING = 8  # fields within fields: deeper than any real code, and bounds the recursion


def requote_fstrings(source: str) -> str:
    """``source`` with every string inside an f-string's replacement field that reuses an enclosing
    f-string's quote character requoted with one no enclosing f-string uses (the pre-3.12 rule).
    One pass over the text; raises ``_Unfixable`` when no such spelling exists."""
    out = list(source)
    i = 0
    while i < len(source):
        if source[i] == "#":
            end = source.find("\n", i)
            i = len(source) if end < 0 else end
            continue
        start = _string_at(source, i)
        if start is None:
            i += 1
            continue
        i = _string_end(source, i, start, out, frozenset(), 0)
    return "".join(out)


def _string_at(source: str, i: int) -> tuple[str, str, int] | None:
    """``(prefix, quote, body start)`` of a string literal starting at ``i``."""
    if i and (source[i - 1].isalnum() or source[i - 1] == "_"):
        return None  # inside a name (``elif"x"`` is a keyword and a string, found at the quote)
    m = _STRING_START.match(source, i)
    if m is None:
        return None
    text = m.group()
    quote = text[-3:] if text[-3:] in ("'''", '"""') else text[-1]
    return text[: -len(quote)], quote, m.end()


def _string_end(
    source: str,
    i: int,
    start: tuple[str, str, int],
    out: list[str],
    taken: frozenset[str],
    depth: int,
    own: str | None = None,
) -> int:
    """The index after the string literal at ``i``; an f-string's fields are requoted in ``out``.
    ``taken``: the quote characters of the f-strings around it; ``own``: the quote character this
    literal will have once requoted (its own by default)."""
    prefix, quote, j = start
    fstring = "f" in prefix.lower()
    inner = taken | {own or quote[0]} if fstring and len(quote) == 1 else taken
    while j < len(source):
        if source.startswith(quote, j):
            return j + len(quote)
        ch = source[j]
        if ch == "\\":
            j += 2
        elif ch == "\n" and len(quote) == 1:
            raise _Unfixable  # unterminated
        elif fstring and ch == "{" and not source.startswith("{{", j):
            j = _field_end(source, j + 1, out, inner, depth + 1)
        elif fstring and ch in "{}":
            j += 2 if source.startswith(ch * 2, j) else 1
        else:
            j += 1
    raise _Unfixable


def _field_end(source: str, j: int, out: list[str], taken: frozenset[str], depth: int) -> int:
    """The index after the ``}`` closing the replacement field whose expression starts at ``j``."""
    if depth > _MAX_NESTING:
        raise _Unfixable
    brackets = 0
    while j < len(source):
        ch = source[j]
        start = _string_at(source, j)
        if start is not None:
            j = _requoted_string_end(source, j, start, out, taken, depth)
            continue
        if ch in "([{":
            brackets += 1
        elif ch in ")]":
            brackets -= 1
        elif ch == "}":
            if brackets == 0:
                return j + 1
            brackets -= 1
        elif ch == ":" and brackets == 0 and not source.startswith(":=", j):
            return _format_spec_end(source, j + 1, out, taken, depth)
        elif ch in "#\\" or (ch in _QUOTES and ch in taken):
            raise _Unfixable
        j += 1
    raise _Unfixable


def _format_spec_end(source: str, j: int, out: list[str], taken: frozenset[str], depth: int) -> int:
    while j < len(source):
        ch = source[j]
        if ch == "{":
            j = _field_end(source, j + 1, out, taken, depth + 1)
        elif ch == "}":
            return j + 1
        elif ch == "\n" or ch in taken:
            raise _Unfixable
        else:
            j += 1
    raise _Unfixable


def _requoted_string_end(
    source: str, j: int, start: tuple[str, str, int], out: list[str], taken: frozenset[str], depth: int
) -> int:
    """The end of a string inside a field; its quotes are swapped in ``out`` when an enclosing
    f-string uses them and the other kind is free and absent from its text."""
    prefix, quote, body = start
    if quote[0] not in taken:
        return _string_end(source, j, start, out, taken, depth)
    free = [q for q in _QUOTES if q not in taken]
    if not free:
        raise _Unfixable
    new = free[0] * len(quote)
    end = _string_end(source, j, start, out, taken, depth, own=free[0])
    if free[0] in source[body : end - len(quote)]:
        raise _Unfixable
    out[body - len(quote) : body] = list(new)
    out[end - len(quote) : end] = list(new)
    return end
