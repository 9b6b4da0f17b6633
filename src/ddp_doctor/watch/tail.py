"""Follow a growing run directory: each rank file read on from where the last refresh stopped.

A refresh costs the new bytes, not the run: per rank file the watcher keeps its inode, the byte
offset of the last complete line read and the columns parsed so far (:class:`RankTail`); new
complete lines are parsed by the same reader as `report` (:func:`rankfile.parse_rank_bytes`, Arrow
for `step` records) and appended. A line still being written (no newline yet) waits for the next
refresh. A file replaced (new inode), truncated (shorter than what was read) or rewritten (the byte
before the offset is no longer a newline) is read again from its start, and the run says so.

The ranks are put together by the reader's own :func:`rundir.reader.assemble` (world size, missing ranks,
ends, launcher exits), so a refresh gives the same :class:`RunData` as `read_run` on the same bytes.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from ddp_doctor.core.safe_io import read_fd
from ddp_doctor.rundir.rankfile import (
    Problems,
    RankData,
    StepColumns,
    data_end,
    duplicates_note,
    file_problems,
    hole_note,
    open_regular,
    parse_rank_bytes,
    step_schema,
    to_columns,
    truncated_note,
)
from ddp_doctor.rundir.reader import RunData, RunDirError, assemble, layout

# A refresh reads at most this much of one file; a run far ahead of the watcher (started on a
# finished run, or a burst) is caught up over several refreshes instead of one huge read.
MAX_READ_BYTES = 64 * 2**20
_KEPT_LISTS = ("configs", "sampler", "replica", "full", "compile_check", "unused", "probe_errors")


def concat_columns(parts: list[StepColumns]) -> StepColumns:
    """Step columns of consecutive pieces of one file, as if read at once."""
    if len(parts) == 1:
        return parts[0]
    out: dict[str, object] = {}
    for f in dataclasses.fields(StepColumns):
        values = [getattr(p, f.name) for p in parts]
        if f.name == "offsets":  # each piece's offsets start at 0: shift by the micro-steps before it
            base = np.cumsum([0] + [int(v[-1]) for v in values[:-1]])
            out[f.name] = np.concatenate([values[0]] + [v[1:] + b for v, b in zip(values[1:], base[1:])])
        elif f.name == "nonfinite":
            out[f.name] = [x for v in values for x in v]
        elif f.name == "autocast":
            out[f.name] = set().union(*values)
        elif f.name == "extra":
            keys = sorted({k for v in values for k in v})
            out[f.name] = {k: np.concatenate([v[k] for v in values if k in v]) for k in keys}
        else:
            out[f.name] = np.concatenate(values)
    return StepColumns(**out)  # type: ignore[arg-type]


@dataclass
class RankTail:
    """One rank file followed: what was read of it, and the records parsed so far."""

    path: Path
    rank: int
    ino: int | None = None
    offset: int = 0  # bytes read: up to and including the last complete line
    pending: int = 0  # bytes after `offset` with no newline yet (a line being written)
    pending_blank: bool = True
    data: RankData = field(init=False)
    parts: list[StepColumns] = field(default_factory=list)
    # the problems of the pieces read (line numbers from the file's start)
    probs: Problems = field(default_factory=Problems)
    last: int = -1  # highest step number read (a step again is dropped, as by read_run)
    notes: list[str] = field(default_factory=list)  # re-reads (file replaced or truncated) and read errors
    error: str | None = None
    skipping: bool = False  # inside a line longer than MAX_READ_BYTES, dropped up to its newline
    hole: int = 0  # bytes at the end of the file never written (sparse), not read

    def __post_init__(self) -> None:
        self.data = RankData(rank=self.rank)

    def _restart(self, why: str) -> None:
        self.notes.append(
            f"rank {self.rank}: {why} after {self.offset} bytes were read; read again from its start"
        )
        self.ino, self.offset, self.pending, self.skipping = None, 0, 0, False
        self.data, self.parts, self.probs, self.last = RankData(rank=self.rank), [], Problems(), -1

    def refresh(self) -> int:
        """Read the complete lines added since the last refresh; return how many bytes were read."""
        try:
            fd, st = open_regular(self.path)
        except OSError as exc:
            self.error = f"rank {self.rank}: cannot read {exc}; kept what was read before"
            return 0
        try:
            self.error = None
            if self.ino is not None and st.st_ino != self.ino:
                self._restart("the file was replaced (new inode)")
            elif st.st_size < self.offset:
                self._restart(f"the file shrank to {st.st_size} bytes")
            elif self.offset and not self.skipping and os.pread(fd, 1, self.offset - 1) != b"\n":
                self._restart("the file was rewritten")
            self.ino = st.st_ino
            size = st.st_size
            self.hole = 0
            if st.st_blocks * 512 < size:  # sparse: a hole at the end was never written (not data)
                end = max(data_end(fd, size), self.offset)
                self.hole, size = size - end, end
            raw = read_fd(fd, min(size - self.offset, MAX_READ_BYTES), self.offset)
        except OSError as exc:  # an I/O error mid-read: try again at the next refresh
            self.error = f"rank {self.rank}: cannot read ({exc.strerror or exc}); kept what was read before"
            return 0
        finally:
            os.close(fd)
        done = 0
        if self.skipping:  # inside an overlong line: drop it up to its newline
            end = raw.find(b"\n") + 1
            done = end if end else len(raw)
            self.skipping = not end
            self.data.lines += bool(end)
        cut = raw.rfind(b"\n", done) + 1
        if cut > done:
            self._parse(raw[done:cut])
            done = cut
        elif len(raw) == MAX_READ_BYTES and not self.skipping and not done:  # no newline in a whole read
            self.skipping = True
            done = len(raw)
            self.probs.add(
                f"rank {self.rank}: line {self.data.lines + 1} is longer than {MAX_READ_BYTES} bytes; skipped"
            )
        self.offset += done
        self.pending = len(raw) - done if not self.skipping else 0
        self.pending_blank = not raw[done:].strip()  # only whitespace: not a line (as read_run)
        return done

    def _parse(self, raw: bytes) -> None:
        probs = Problems()
        piece, table = parse_rank_bytes(raw, self.rank, probs, self.data.lines, self.data.header)
        if table.num_rows:  # steps already read are dropped (the piece itself has no duplicate left)
            steps = np.asarray(table["step"].to_numpy(zero_copy_only=False), dtype=np.int64)
            fresh = steps > self.last
            if not fresh.all() and self.parts:  # a step number not above the last: only those are looked up
                fresh[~fresh] = ~np.isin(steps[~fresh], self.parts[0].step)
            if not fresh.all():
                probs.add(duplicates_note(self.rank, int((~fresh).sum()), np.unique(steps[~fresh])))
                table = table.filter(pa.array(fresh))
            if fresh.any():
                self.last = max(self.last, int(steps[fresh].max()))
        self.parts.append(to_columns(table, self.rank, probs))
        if len(self.parts) > 1:  # keep one merged piece: the next merge copies it once, not every piece
            self.parts = [concat_columns(self.parts)]
        self.probs.all.extend(probs.all)
        self.probs.damage.extend(probs.damage)
        d = self.data
        d.header = d.header or piece.header
        d.headers_seen += piece.headers_seen
        d.end = piece.end or d.end
        d.unknown_kinds += piece.unknown_kinds
        d.lines += piece.lines
        for name in _KEPT_LISTS:
            getattr(d, name).extend(getattr(piece, name))
        for kind, recs in piece.records.items():
            d.records.setdefault(kind, []).extend(recs)

    def snapshot(self) -> tuple[RankData, Problems]:
        """The rank as read so far, with the problems `read_run` would list for the same bytes."""
        steps = self.parts[0] if self.parts else to_columns(step_schema(2).empty_table(), self.rank)
        data = dataclasses.replace(self.data, steps=steps)
        for name in _KEPT_LISTS:  # fresh lists: the analysis may append, the next piece too
            setattr(data, name, list(getattr(self.data, name)))
        data.records = {k: list(v) for k, v in self.data.records.items()}
        probs = Problems()
        probs.all, probs.damage = list(self.probs.all), list(self.probs.damage)
        for note in self.notes + ([self.error] if self.error else []):
            probs.add(note, damage=False)
        if self.hole:
            probs.add(hole_note(self.rank, self.hole))
        if self.pending and not self.pending_blank:
            probs.add(truncated_note(self.rank, self.pending), damage=False)
        file_problems(data, probs)
        return data, probs


@dataclass
class RunTail:
    """A run directory followed; :meth:`refresh` returns the run as read so far."""

    path: Path
    ranks: dict[int, RankTail] = field(default_factory=dict)
    waiting: str | None = None  # why there is no run to show yet (not started, no rank data)
    new_bytes: int = 0  # read by the last refresh
    changed: bool = True  # the last refresh read new lines or found a changed manifest
    manifest_ended: bool = False  # the manifest has an end (the command finished)
    _manifest_key: object = None

    def refresh(self) -> RunData | None:
        """Read what was added; None while the directory holds no run yet (see :attr:`waiting`)."""
        probs = Problems()
        self.new_bytes = 0
        try:
            manifest, has_manifest, named = layout(self.path, probs)
        except RunDirError as exc:
            self.waiting = str(exc)
            return None
        self.manifest_ended = "end" in manifest
        present = {rank for _, rank in named}
        for rank in [r for r in self.ranks if r not in present]:
            del self.ranks[rank]  # removed (or replaced by something that is not a regular file)
        for path, rank in named:
            tail = self.ranks.get(rank)
            if tail is None or tail.path != path:
                tail = self.ranks[rank] = RankTail(path, rank)
            self.new_bytes += tail.refresh()
        parsed = [(rank, *tail.snapshot()) for rank, tail in sorted(self.ranks.items())]
        try:
            run = assemble(self.path, manifest, has_manifest, len(named), parsed, probs)
        except RunDirError as exc:
            self.waiting = str(exc)
            return None
        self.waiting = None
        key = (repr(sorted(manifest.items())), len(named))
        self.changed = self.new_bytes > 0 or key != self._manifest_key
        self._manifest_key = key
        return run


def read_tail(path: Path | str) -> RunData:
    """The run at ``path`` read the watcher's way, in one refresh (tests compare it with read_run)."""
    run = RunTail(Path(path)).refresh()
    if run is None:
        raise RunDirError(f"{path}: no run to read")
    return run
