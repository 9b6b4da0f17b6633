"""Which files a ``lint PATH...`` run reads: .py and .ipynb under the given paths.

Directories are walked recursively, skipping hidden folders, virtual environments and build
output (``DEFAULT_EXCLUDES``), the patterns of ``.gitignore`` files found on the way down, and
the ``exclude`` patterns of ``[tool.ddp-doctor]``. Patterns follow gitignore's common subset:
``*``/``?``/``**`` globs (no ``[...]`` classes), a leading ``/`` anchors to the ignore file's folder, a trailing ``/``
matches folders only, ``!`` re-includes. Files named explicitly are always linted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".py", ".pyi", ".ipynb")
DEFAULT_EXCLUDES = (
    ".git/",
    ".hg/",
    ".venv/",
    "venv/",
    "env/",
    "__pycache__/",
    "build/",
    "dist/",
    ".tox/",
    ".nox/",
    ".eggs/",
    "*.egg-info/",
    "node_modules/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ipynb_checkpoints/",
)


@dataclass(frozen=True)
class Pattern:
    base: Path
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool

    @classmethod
    def parse(cls, base: Path, text: str) -> Pattern | None:
        text = text.strip()
        if not text or text.startswith("#"):
            return None
        negate = text.startswith("!")
        text = text[1:] if negate else text
        dir_only = text.endswith("/")
        text = text.rstrip("/")
        anchored = "/" in text
        text = text.lstrip("/")
        regex = _glob_to_regex(text)
        if not anchored:
            regex = f"(?:.*/)?{regex}"
        return cls(base, re.compile(f"^{regex}$"), negate, dir_only)

    def matches(self, path: Path, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return False
        return bool(self.regex.match(rel))


def _glob_to_regex(glob: str) -> str:
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            ch = glob[i]
            out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
            i += 1
    return "".join(out)


def _excluded(path: Path, is_dir: bool, patterns: list[Pattern]) -> bool:
    excluded = False
    for p in patterns:
        if p.matches(path, is_dir):
            excluded = not p.negate
    return excluded


def _gitignore(folder: Path) -> list[Pattern]:
    path = folder / ".gitignore"
    if not path.is_file():  # absent, or a FIFO/device that would block the read
        return []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [p for line in text.splitlines() if (p := Pattern.parse(folder, line))]


def iter_files(root: Path, extra: list[Pattern], suffixes: tuple[str, ...] = SUFFIXES) -> Iterator[Path]:
    """Regular files under ``root`` whose names end in ``suffixes`` (by default the lintable ones),
    honouring the default excludes, ``.gitignore`` files and ``extra``; paths are spelled from ``root``
    as given (``.`` stays relative) while patterns match on absolute paths."""
    given, root = root, root.resolve()
    for path in _walk(root, extra, suffixes):
        yield given / path.relative_to(root)


def _walk(root: Path, extra: list[Pattern], suffixes: tuple[str, ...]) -> Iterator[Path]:
    base = [p for text in DEFAULT_EXCLUDES if (p := Pattern.parse(root, text))]
    stack: list[tuple[Path, list[Pattern]]] = [(root, base + extra + _gitignore(root))]
    while stack:
        folder, patterns = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if not _excluded(path, True, patterns):
                    stack.append((path, patterns + _gitignore(path)))
            elif (
                entry.name.endswith(suffixes)
                and _regular(entry)  # FIFOs, sockets, devices: reading them could block forever
                and not _excluded(path, False, patterns)
            ):
                yield path


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # follows symlinks; False for FIFOs and other special files
    except OSError:
        return False


def exclude_patterns(base: Path, texts: tuple[str, ...]) -> list[Pattern]:
    return [p for t in texts if (p := Pattern.parse(base, t))]
