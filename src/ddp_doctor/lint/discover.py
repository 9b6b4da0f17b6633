"""Which files a ``lint PATH...`` run reads: .py and .ipynb under the given paths.

Directories are walked recursively, skipping hidden folders, virtual environments and build
output (``DEFAULT_EXCLUDES``), the patterns of ``.gitignore`` files found on the way down, and
the ``exclude`` patterns of ``[tool.ddp-doctor]``. Patterns follow gitignore's common subset:
``*``/``?``/``**`` globs (no ``[...]`` classes), a leading ``/`` anchors to the ignore file's folder, a trailing ``/``
matches folders only, ``!`` re-includes. Files named explicitly are always linted.

``.gitignore`` hides only files git does not track (git's own rule): a training script committed
despite a pattern that matches it (microgpt's ``.gitignore`` lists the ``train_distributed.py`` it
ships) is still read. Inside a git work tree the tracked files come from ``git ls-files``; without
git they cannot be told apart, and ``respecting_gitignore(False)`` (``--no-respect-gitignore``)
reads every file, as for a checkout whose files are all tracked.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".py", ".pyi", ".ipynb")
GIT_TIMEOUT_S = 10  # a listing slower than this (a huge or network-mounted tree) falls back to the patterns
_RESPECT_GITIGNORE: ContextVar[bool] = ContextVar("respect_gitignore", default=True)
# ``git ls-files`` answers per root within one lint run (the source walk, the launch scripts and the
# YAML configurations walk the same root): None outside ``respecting_gitignore``, where nothing is kept.
_TRACKED: ContextVar[dict[Path, frozenset[Path]] | None] = ContextVar("tracked_files", default=None)
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


@contextmanager
def respecting_gitignore(respect: bool) -> Iterator[None]:
    """Within the block, ``.gitignore`` patterns hide untracked files (``True``, the default) or
    nothing (``False``: every file under the walked folders is taken as tracked)."""
    token = _RESPECT_GITIGNORE.set(respect)
    cache = _TRACKED.set({})
    try:
        yield
    finally:
        _TRACKED.reset(cache)
        _RESPECT_GITIGNORE.reset(token)


def iter_files(root: Path, extra: list[Pattern], suffixes: tuple[str, ...] = SUFFIXES) -> Iterator[Path]:
    """Regular files under ``root`` whose names end in ``suffixes`` (by default the lintable ones),
    honouring the default excludes, ``.gitignore`` files (for untracked files) and ``extra``; paths are
    spelled from ``root`` as given (``.`` stays relative) while patterns match on absolute paths."""
    given, root = root, root.resolve()
    for path in _walk(root, extra, suffixes):
        yield given / path.relative_to(root)


def _walk(root: Path, extra: list[Pattern], suffixes: tuple[str, ...]) -> Iterator[Path]:
    fixed = [p for text in DEFAULT_EXCLUDES if (p := Pattern.parse(root, text))] + extra
    respect = _RESPECT_GITIGNORE.get()
    tracked = _tracked(root) if respect else frozenset()

    def hidden(path: Path, is_dir: bool, ignores: list[Pattern], below_ignored: bool) -> bool:
        if _excluded(path, is_dir, fixed):
            return True
        ignored = below_ignored or respect and _excluded(path, is_dir, ignores)
        return ignored and path not in tracked

    # (folder, its .gitignore patterns, whether a folder on the way is ignored: entered only for
    # the tracked files it holds, so its untracked ones stay hidden)
    stack: list[tuple[Path, list[Pattern], bool]] = [(root, _gitignore(root) if respect else [], False)]
    while stack:
        folder, ignores, below_ignored = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if not hidden(path, True, ignores, below_ignored):
                    inner = below_ignored or respect and _excluded(path, True, ignores)
                    stack.append((path, ignores + _gitignore(path) if respect else ignores, inner))
            elif (
                entry.name.endswith(suffixes)
                and _regular(entry)  # FIFOs, sockets, devices: reading them could block forever
                and not hidden(path, False, ignores, below_ignored)
            ):
                yield path


def _tracked(root: Path) -> frozenset[Path]:
    """:func:`_git_tracked`, asked once per root within a lint run."""
    cache = _TRACKED.get()
    if cache is None:
        return _git_tracked(root)
    if root not in cache:
        cache[root] = _git_tracked(root)
    return cache[root]


def _git_tracked(root: Path) -> frozenset[Path]:
    """The files git tracks under ``root`` and their folders (absolute), or nothing when ``root`` is
    not in a git work tree, git is missing, refuses (an unsafe owner) or is slow. fsmonitor is turned
    off: it is the one setting through which a repository's config runs a command on a listing."""
    if not any((d / ".git").exists() for d in (root, *root.parents)):
        return frozenset()
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-C", str(root), "ls-files", "-z", "--cached"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return frozenset()
    if done.returncode != 0:
        return frozenset()
    out: set[Path] = set()
    for raw in done.stdout.split(b"\0"):
        if not raw:
            continue
        path = root / os.fsdecode(raw)
        while path != root and path not in out:
            out.add(path)
            path = path.parent
    return frozenset(out)


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # follows symlinks; False for FIFOs and other special files
    except OSError:
        return False


def exclude_patterns(base: Path, texts: tuple[str, ...]) -> list[Pattern]:
    return [p for t in texts if (p := Pattern.parse(base, t))]
