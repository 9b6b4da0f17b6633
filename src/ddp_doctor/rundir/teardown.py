"""Did training complete when the command failed? The one place that tells a teardown abort from a crash.

A rank of a finished gloo job sometimes dies after its last step with "terminate called without an
active exception" (SIGABRT, exit -6): a torch/gloo race at interpreter finalization (pytorch PR
#179291; measured with and without the probe in docs/probe.md, "Teardown aborts"). torchrun then
exits 1 and the job looks failed although every step ran. `ddp-doctor run`, `report` and the
reference trainer's launcher (`demo`, `train`, `ablate`) ask `classify_*` here and say

    training completed; rank N aborted at interpreter teardown after its last step
    (a known torch/gloo teardown race)

only when the evidence proves both halves:

* completed: every rank 0..world_size-1 wrote `end` (the probe's atexit record: after the last
  step, no unhandled exception: `end.exception` absent); for the reference trainer without the
  probe, rank 0 logged the final step's metrics (its all-reduce needs every rank);
* aborted at teardown: the failed ranks the launcher reported (launch/exits.py:
  `launcher/exits-*.json`) died of SIGABRT, or of the SIGTERM/SIGKILL torchrun sends the other
  ranks once one failed; for a single process, the command's own code is 128 + SIGABRT.

When training completed but the launcher did not say how ranks exited, the note says only that
(exit code after the last step on every rank). Anything else stays a failure: a rank killed
mid-run has no `end`, an exception is recorded in `end`, exit codes other than SIGABRT are kept.
The command's exit code is never changed; the note is added beside it.

Reads at most HEAD_BYTES + TAIL_BYTES of each rank file (regular files only, no symlinks followed),
so it is cheap enough for `ddp-doctor run` to call right after the command and safe on damaged dirs.
"""

from __future__ import annotations

import json
import os
import signal
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ddp_doctor.rundir.records import ATTEMPTS_DIR, RANKS_DIR

# Where launcher failure reports go inside a run directory (written by launch/exits.py in the
# torchrun process; its ENV_EXITS_DIR points here).
EXITS_SUBDIR = "launcher"
SIGABRT = int(signal.SIGABRT)
STOPPED_BY_LAUNCHER = (-int(signal.SIGTERM), -int(signal.SIGKILL))
RACE = "a known torch/gloo teardown race"
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
MAX_EXIT_FILES = 64
MAX_RANKS = 1 << 16


@dataclass(frozen=True)
class RankFailure:
    """One rank that did not finish: how it exited and how far it got.

    `exit_code` is what the launcher saw (negative: killed by that signal; None when no launcher
    reported it, e.g. a single-process command: then the command's code); `steps` the optimizer
    steps it recorded (its last step record + 1), so it stopped *in* step `steps`; `exception`
    the last line of the unhandled exception its `end` record holds (`Type: message`, first line);
    `stopped` True when it is a consequence: the launcher stopped it (SIGTERM) after another rank
    failed, or it raised only once a peer had gone (no own exit code).
    """

    rank: int
    exit_code: int | None
    steps: int | None
    exception: str | None
    stopped: bool = False

    @property
    def signal(self) -> str | None:
        return signal_name(self.exit_code) if self.exit_code is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "steps": self.steps,
            "exception": self.exception,
            "stopped_by_launcher": self.stopped,
        }


def signal_name(exitcode: int) -> str | None:
    """ "SIGABRT" for -6; None for a normal exit code."""
    if exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


@dataclass(frozen=True)
class ExitStatus:
    """The command's exit, judged: `completed` is True when training finished on every rank."""

    code: int | None
    completed: bool = False
    teardown_ranks: tuple[int, ...] = ()  # ranks that aborted (SIGABRT) after their last step
    failures: dict[int, int] = field(default_factory=dict)  # rank -> exit code the launcher saw
    note: str | None = None
    # Ranks that failed, the first cause first (RankFailure); empty for a run that is ok
    failed: tuple[RankFailure, ...] = ()

    @property
    def ok(self) -> bool:
        """The run counts as successful: exit 0, or only a teardown abort after complete training."""
        return self.code == 0 or (self.completed and bool(self.teardown_ranks))

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "completed": self.completed,
            "teardown_ranks": list(self.teardown_ranks),
            "failures": {str(k): v for k, v in sorted(self.failures.items())},
            "note": self.note,
            "failed_ranks": [f.to_json() for f in self.failed],
        }


def _who(ranks: tuple[int, ...]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(map(str, ranks)) if ranks else "a rank"


def teardown_note(ranks: tuple[int, ...]) -> str:
    return f"training completed; {_who(ranks)} aborted at interpreter teardown after its last step ({RACE})"


def _read_regular(path: Path) -> tuple[bytes, bytes] | None:
    """(head, tail) of a regular file, or None (missing, FIFO, directory, symlink, unreadable)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        head = os.pread(fd, HEAD_BYTES, 0)
        tail = os.pread(fd, TAIL_BYTES, max(0, st.st_size - TAIL_BYTES))
        return head, tail
    except OSError:
        return None
    finally:
        os.close(fd)


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class RankTail:
    """The end of one rank file: its `end` record (None if the file does not end with one) and the
    number of optimizer steps its last `step` record shows (None if none is in the tail)."""

    end: dict[str, Any] | None
    steps: int | None


def rank_tails(run_dir: Path) -> tuple[int | None, dict[int, RankTail]]:
    """(world size from the headers, {rank: RankTail}) of a run directory."""
    tails: dict[int, RankTail] = {}
    world: int | None = None
    try:
        files = sorted((Path(run_dir) / RANKS_DIR).glob("rank-*.jsonl"))[:MAX_RANKS]
    except OSError:
        return None, tails
    for f in files:
        try:
            rank = int(f.stem.split("-", 1)[1])
        except ValueError:
            continue
        data = _read_regular(f)
        if data is None:
            tails[rank] = RankTail(None, None)
            continue
        head, tail = data
        header = _record(head.split(b"\n", 1)[0])
        if header is not None and header.get("kind") == "header":
            size = header.get("world_size")
            if isinstance(size, int) and not isinstance(size, bool) and 0 < size <= MAX_RANKS:
                world = max(world or 0, size)
        # from the last line back ([0]: maybe cut), decoding only until the last step record:
        # a 1,024-rank report would otherwise decode ~100 lines per rank it does not need
        end, last_step, seen = None, None, False
        for line in reversed(tail.split(b"\n")[1:]):
            r = _record(line)
            if r is None:
                continue
            if not seen:
                seen = True
                end = r if r.get("kind") == "end" else None
            if r.get("kind") == "step":
                last_step = r.get("step")
                break
        steps = last_step + 1 if isinstance(last_step, int) and not isinstance(last_step, bool) else None
        tails[rank] = RankTail(end, steps)
    return world, tails


def launcher_failures(directory: Path, problems: list[str] | None = None) -> dict[int, int] | None:
    """{global rank: exit code} from the launcher's failure reports; None when there is none.
    A report that is not a readable JSON object with a `failures` object is skipped and, when
    ``problems`` is given, named there."""
    try:
        files = sorted(Path(directory).glob("exits-*.json"))[:MAX_EXIT_FILES]
    except OSError:
        return None
    found: dict[int, int] | None = None
    for f in files:
        data = _read_regular(f)
        record = _record(data[0]) if data is not None else None
        failures = record.get("failures") if record is not None else None
        if not isinstance(failures, dict):
            if problems is not None:
                problems.append(
                    f"{EXITS_SUBDIR}/{f.name[:80]!r}: not a launcher failure report (unreadable, not a "
                    "JSON object, or no `failures` object); how the ranks exited may be unknown"
                )
            continue
        found = found if found is not None else {}
        for rank, failure in failures.items():
            code = failure.get("exitcode") if isinstance(failure, dict) else None
            if str(rank).isdigit() and isinstance(code, int) and not isinstance(code, bool):
                found[int(rank)] = code
    return found


def _judge(
    code: int | None, completed: bool, failures: dict[int, int] | None, single_rank: int | None
) -> ExitStatus:
    if code is None or code == 0:
        return ExitStatus(code=code, completed=completed or code == 0, failures=failures or {})
    if not completed:
        return ExitStatus(code=code, failures=failures or {})
    if failures:
        aborted = tuple(sorted(r for r, c in failures.items() if c == -SIGABRT))
        # Once one rank failed, torchrun stops the others (SIGTERM, then SIGKILL): after their
        # `end`, that is a consequence of the abort, not a second failure.
        stopped = tuple(sorted(r for r, c in failures.items() if c in STOPPED_BY_LAUNCHER))
        if aborted and len(aborted) + len(stopped) == len(failures):
            note = teardown_note(aborted)
            if stopped:
                note += f"; the launcher then stopped {_who(stopped)}"
            return ExitStatus(code, True, aborted, failures, note)
        others = ", ".join(f"rank {r}: exit {c}" for r, c in sorted(failures.items()) if c != -SIGABRT)
        return ExitStatus(
            code,
            True,
            failures=failures,
            note=f"every rank completed its last step, then the launcher reported failures ({others})",
        )
    if code in (128 + SIGABRT, -SIGABRT) and single_rank is not None:  # the command is the rank
        return ExitStatus(code, True, (single_rank,), {}, teardown_note((single_rank,)))
    return ExitStatus(
        code,
        True,
        note=f"every rank completed its last step, then the command exited with code {code} "
        "(after training; the launcher did not report how each rank exited)",
    )


def classify_run(run_dir: Path | str, code: int | None) -> ExitStatus:
    """Judge a probed run directory's exit `code` (the manifest's `exit_code`).

    Completed: every rank wrote `end` without an exception, or (a rank torchrun stopped with
    SIGTERM/SIGKILL after another rank failed, before its own `end`) its last step record is the
    final step the ranks with `end` reached.
    """
    run_dir = Path(run_dir)
    world, tails = rank_tails(run_dir)
    world = world or (max(tails) + 1 if tails else 0)
    failures = launcher_failures(run_dir / EXITS_SUBDIR)
    ended = {r: t for r, t in tails.items() if t.end is not None and "exception" not in t.end}
    final = max(
        (t.end.get("steps") for t in ended.values() if t.end is not None), default=None, key=_int_or_0
    )

    def done(rank: int) -> bool:
        if rank in ended:
            return True
        tail = tails.get(rank)
        stopped = failures is not None and failures.get(rank) in STOPPED_BY_LAUNCHER
        return stopped and tail is not None and tail.end is None and bool(final) and tail.steps == final

    completed = bool(tails) and bool(ended) and all(done(r) for r in range(world))
    single = 0 if world == 1 else None
    status = _judge(code, completed, failures, single)
    if status.ok or completed or code is None:
        return status
    return replace(status, failed=failed_ranks(code, world, tails, failures))


EXCEPTION_CHARS = 300


def _exception_line(end: dict[str, Any] | None) -> str | None:
    """`Type: message` of the exception an `end` record holds: its first line, cut."""
    text = end.get("exception") if end is not None else None
    if not isinstance(text, str) or not text.strip():
        return None
    from ddp_doctor.core.redact import redact_text  # a run directory from an older version holds it verbatim

    line = redact_text(text.strip().splitlines()[0].strip())
    return line[: EXCEPTION_CHARS - 1] + "…" if len(line) > EXCEPTION_CHARS else line


def failed_ranks(
    code: int, world: int, tails: dict[int, RankTail], failures: dict[int, int] | None
) -> tuple[RankFailure, ...]:
    """Every rank of a failed run that did not finish, the likely first cause first.

    A rank failed when the launcher reported a non-zero exit for it, its `end` holds an exception,
    it has no `end` (killed), or it has no rank file at all. Order: a rank's own failure before
    one the launcher caused (SIGTERM to the survivors; a SIGKILL counts as the launcher's only
    when another rank has an own failure), then by the time of its `end` (the first to raise
    first), then by rank. Without launcher reports a single-process command's code is its rank's
    (128 + N: killed by signal N when it wrote no `end`).
    """
    out: list[tuple[float, RankFailure]] = []
    reported = failures or {}
    for rank in sorted(set(range(world)) | set(tails) | set(reported)):
        tail = tails.get(rank)
        end = tail.end if tail is not None else None
        exit_code = reported.get(rank)
        if exit_code is None and failures is None and world <= 1:
            exit_code = 128 - code if code > 128 and end is None else code
        exception = _exception_line(end)
        if exit_code in (None, 0) and end is not None and exception is None:
            continue  # finished cleanly; another rank is what failed
        steps = end.get("steps") if end is not None else None
        if not isinstance(steps, int) or isinstance(steps, bool):
            steps = tail.steps if tail is not None else None
        when = end.get("time") if end is not None else None
        when = float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else float("inf")
        out.append((when, RankFailure(rank, exit_code, steps, exception, exit_code == -int(signal.SIGTERM))))
    own = any(not f.stopped and f.exit_code != -int(signal.SIGKILL) for _, f in out)
    marked = [
        (when, replace(f, stopped=True) if own and f.exit_code == -int(signal.SIGKILL) else f)
        for when, f in out
    ]
    marked.sort(key=lambda item: (item[1].stopped, item[0], item[1].rank))
    return tuple(f for _, f in marked)


def _int_or_0(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def classify_trainer(out_dir: Path | str, code: int | None, steps: int, metrics_file: str) -> ExitStatus:
    """Judge the reference trainer launched without the probe: completed = the last step's metrics."""
    out = Path(out_dir)
    data = _read_regular(out / metrics_file)
    completed = False
    if data is not None:
        lines = [line for line in data[1].split(b"\n") if line.strip()]
        last = _record(lines[-1]) if lines else None
        completed = last is not None and last.get("step") == steps - 1
    return _judge(code, completed, launcher_failures(out / EXITS_SUBDIR), None)


MAX_ATTEMPTS = 64


def attempt_notes(run_dir: Path | str) -> list[str]:
    """Sentences about the earlier torchrun attempts kept in RUN/attempts/<restart>/ (a
    `--max-restarts` run whose workers were restarted): which attempt the report diagnoses, and
    how each earlier one ended (its ranks' exceptions, or the ranks without an `end`)."""
    base = Path(run_dir) / ATTEMPTS_DIR
    try:
        if not stat.S_ISDIR(os.lstat(base).st_mode):
            return []
        attempts = sorted(int(p.name) for p in base.iterdir() if p.name.isdigit())[:MAX_ATTEMPTS]
    except OSError:
        return []
    if not attempts:
        return []
    notes = [
        f"torchrun restarted the workers: this report diagnoses the last attempt (restart "
        f"{attempts[-1] + 1} or later); the rank files of {len(attempts)} earlier attempt(s) are kept "
        f"in {ATTEMPTS_DIR}/ and not diagnosed"
    ]
    for n in attempts:
        _, tails = rank_tails(base / str(n))
        raised = [(r, _exception_line(t.end)) for r, t in sorted(tails.items()) if _exception_line(t.end)]
        no_end = [r for r, t in sorted(tails.items()) if t.end is None]
        parts = [f"rank {r} raised {e}" for r, e in raised[:3]]
        if no_end:
            parts.append(f"{_who(tuple(no_end))} wrote no `end` (stopped or killed)")
        steps = max((t.steps or 0 for t in tails.values()), default=0)
        notes.append(
            f"attempt {n} ({len(tails)} rank file(s), up to {steps} step(s)): "
            + ("; ".join(parts) or "ended")
        )
    return notes
