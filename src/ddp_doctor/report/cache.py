"""The report cache: a run directory that has not changed is diagnosed once per set of options.

``RUN/.ddp-doctor-cache/report-<digest>.json`` holds one rendered report (the bytes `report` printed
or wrote) with the *fingerprint* of what it was computed from:

* every entry of the run directory, recursively — relative path, file type, size, mtime, ctime and
  inode, by ``lstat`` (no symlink is followed) — except the cache directory itself and what the
  report writes there (``report.html``, ``tensorboard/``, the ``--output`` file);
* the code: ddp-doctor's version, the Python version and the size and mtime of every source file of
  the package (an edited checkout is another fingerprint).

A rank file that grew (a run in progress), a file replaced (another inode, ctime), added, removed or
touched gives another fingerprint: a miss, and the run is read again. The fingerprint is taken
before and after the diagnosis; a report whose run changed while it was read is not cached (an
in-progress run is cached only between two writes of the probe). The digest in the file name is of
the options that change the output (the path as given, format, language, ``--rollups``, ``--steps``
and, for the terminal, the console's width and colours), so each set has its own entry.

Only runs whose files hold at least :data:`CACHE_MIN_BYTES` are cached: a small run is read in
well under a second, and tests that change the analysis in-process must not meet an old report.
A cache entry that is damaged (not JSON, fields missing, a symlink or FIFO in its place) is a miss
with a note on stderr, never an exception; it is replaced by the next report. Entries are written
through a temp file renamed into place (core/safe_io.py), only into a cache directory that is a real
directory (a symlink there: no cache). Imported logs and ``--export`` are never cached.

This module imports nothing heavy: a warm report is this fingerprint, one small read and the
output (docs/report.md, "Warm reports").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddp_doctor import __version__
from ddp_doctor.core.findings import SEVERITY_ORDER
from ddp_doctor.core.safe_io import PRIVATE_FILE, ensure_private_dir, read_regular, write_text
from ddp_doctor.rundir.records import CACHE_DIR, RANKS_DIR

VERSION = 1
CACHE_MIN_BYTES = 4 * 2**20  # as the column cache (rundir/rankfile/cache.py); tests patch this one
MAX_ENTRIES = 200_000  # a run directory with more entries is not fingerprinted (not cached)
# what `report` itself writes into the run directory: never part of what a report is computed from
OUTPUTS = frozenset({CACHE_DIR, "report.html", "tensorboard"})
_PACKAGE = Path(__file__).resolve().parents[1]
_code_stamp: str | None = None


@dataclass
class Request:
    """One report's options: what must be equal for a cached report to be the same report."""

    run_dir: Path
    fmt: str
    lang: str
    rollups: str
    steps: list[str]
    output: Path | None = None
    console: list[Any] = field(default_factory=list)  # width, colours, terminal: text to a terminal

    def digest(self) -> str:
        opts = [str(self.run_dir), self.fmt, self.lang, self.rollups, self.steps, self.console]
        return hashlib.blake2b(json.dumps(opts).encode(), digest_size=12).hexdigest()

    def entry_path(self) -> Path:
        return self.run_dir / CACHE_DIR / f"report-{self.digest()}.json"


@dataclass
class Entry:
    """A cached report: the output and the confirmed findings (``--fail-on`` needs their severity)."""

    output: str
    confirmed: list[tuple[str, str]]


def is_run_dir(path: Path) -> bool:
    """A real directory with a real ``ranks/`` directory (the only paths the cache serves)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode) and stat.S_ISDIR(os.lstat(path / RANKS_DIR).st_mode)
    except OSError:
        return False


def request_for(
    run_dir: Path, fmt: str, output: Path | None, lang: str, rollups: str, steps: list[str]
) -> Request | None:
    """The request of `report RUN_DIR` with these options; None for a path that is not a run directory.
    Text to the terminal keys on the console (report/console.py); html without ``--output`` is
    written to RUN/report.html, as the command does."""
    if not is_run_dir(run_dir):
        return None
    console: list[Any] = []
    if fmt == "text" and output is None:
        from ddp_doctor.report.console import console_key, report_console

        console = console_key(report_console())
    if fmt == "html" and output is None:
        output = run_dir / "report.html"
    return Request(run_dir, fmt, lang, rollups, list(steps), output=output, console=console)


def code_stamp() -> str:
    """ddp-doctor's version, Python's, and every source file's size and mtime (computed once)."""
    global _code_stamp
    if _code_stamp is None:
        h = hashlib.blake2b(f"{VERSION} {__version__} {sys.version}".encode(), digest_size=16)
        for root, dirs, files in os.walk(_PACKAGE):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    with contextlib.suppress(OSError):
                        st = os.lstat(os.path.join(root, name))
                        h.update(f"{root}/{name} {st.st_size} {st.st_mtime_ns}\n".encode())
        _code_stamp = h.hexdigest()
    return _code_stamp


def fingerprint(req: Request) -> tuple[str, int] | None:
    """(digest, bytes in files) of the run directory and the code (module doc); None when it cannot be
    listed or holds more than :data:`MAX_ENTRIES` entries."""
    h = hashlib.blake2b(code_stamp().encode(), digest_size=16)
    skip_output = None
    if req.output is not None:
        with contextlib.suppress(OSError):
            skip_output = os.path.abspath(req.output)
    total, seen = 0, 0
    stack = [(str(req.run_dir), "")]
    try:
        while stack:
            where, rel = stack.pop()
            with os.scandir(where) as it:
                entries = sorted(it, key=lambda e: e.name)
            for e in entries:
                seen += 1
                if seen > MAX_ENTRIES:
                    return None
                if (not rel and e.name in OUTPUTS) or os.path.abspath(e.path) == skip_output:
                    continue
                st = e.stat(follow_symlinks=False)
                kind = stat.S_IFMT(st.st_mode)
                h.update(
                    f"{rel}{e.name}\0{kind} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino}\n".encode()
                )
                if stat.S_ISDIR(st.st_mode):
                    stack.append((e.path, f"{rel}{e.name}/"))
                elif stat.S_ISREG(st.st_mode):
                    total += st.st_size
    except OSError:
        return None
    return h.hexdigest(), total


def load(req: Request, print_: Any = None) -> Entry | None:
    """The cached report for ``req`` if its fingerprint is the run's now; None otherwise. A damaged
    entry is a miss with a note (``print_``, default stderr)."""
    path = req.entry_path()
    if not os.path.lexists(path):
        return None  # no entry: the ordinary miss
    try:
        raw = json.loads(read_regular(path))
        if not isinstance(raw, dict) or raw.get("version") != VERSION:
            raise ValueError("another version or not an object")
        fp, output, confirmed = raw["fingerprint"], raw["output"], raw["confirmed"]
        if not isinstance(fp, str) or not isinstance(output, str) or not isinstance(confirmed, list):
            raise ValueError("fields of the wrong type")
        pairs = [(str(i), str(s)) for i, s in confirmed]
        if any(s not in SEVERITY_ORDER for _, s in pairs):
            raise ValueError("a severity not known")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        note = f"note: report cache {path.name} unusable ({str(exc)[:120]}); the run is read again"
        (print_ or (lambda s: print(s, file=sys.stderr)))(note)
        return None
    now = fingerprint(req)
    if now is None or now[0] != fp:
        return None
    return Entry(output, pairs)


def save(req: Request, before: tuple[str, int] | None, entry: Entry) -> bool:
    """Cache ``entry`` if the run is big enough and unchanged since ``before`` (taken before it was
    read); False when not cached (small, changed, or the cache directory is not ours to write)."""
    if before is None or before[1] < CACHE_MIN_BYTES:
        return False
    after = fingerprint(req)
    if after is None or after[0] != before[0]:
        return False  # the run changed while it was read (in progress): the next report reads it again
    where = req.run_dir / CACHE_DIR
    if not ensure_private_dir(where):
        return False
    try:
        body = {
            "version": VERSION,
            "fingerprint": before[0],
            "output": entry.output,
            "confirmed": entry.confirmed,
        }
        write_text(req.entry_path(), json.dumps(body), mode=PRIVATE_FILE)
    except (OSError, ValueError):
        return False
    return True
