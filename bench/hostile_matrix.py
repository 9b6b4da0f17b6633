"""Hostile-input matrix: an outside tester's count of tries and failures per area (issue 10).

Every try runs the real command line (`python -m ddp_doctor.cli ...`) as a subprocess, in its own
session, with a wall-clock timeout, RLIMIT_AS / RLIMIT_FSIZE / no core files (set with prlimit), and its peak RSS read
from ``wait4``. The inputs are made here, from the documented formats (docs/run-format.md,
docs/lint.md, docs/plan.md) and from real runs of the reference trainer — not from the unit tests'
fixtures. A try FAILS when any of these holds:

* a Python traceback on stdout/stderr, or an exit code outside {0, 1, 2} (or outside the codes the
  try expects, e.g. 2 for "not a run", 0 for a damaged run that still has data), or death by signal;
* it ran past the timeout (a hang: FIFOs, /dev/zero, symlink loops), or its peak RSS passed the limit;
* silently wrong, where an oracle exists: damage an independent line parser can see (a line that is
  not a JSON object, a truncated last line, a FIFO/loop/directory where a file belongs) but no
  problem listed (`run.problems`, the "Data quality" section); duplicate steps counted twice; a
  schema it does not know read as one it does; stdout of `--format json` that is not JSON;
* an output followed a symlink (the planted target's bytes changed);
* raw control characters (C0 except \\t \\n, lone \\r, DEL, C1) on stdout/stderr — and, for the
  escape tries, the injected payloads on a pseudo-terminal;
* a secret given on the command line or in the environment appears in any file the tool wrote.

    python bench/hostile_matrix.py --quick              # CI-sized subset (tests/test_hostile_matrix.py)
    python bench/hostile_matrix.py --out /tmp/hm        # the full matrix: table on stdout,
                                                        # every try in OUT/tries.jsonl

Areas: reader, compare, lint, plan, outputs, escapes, concurrency, secrets. Results: docs/reliability.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import pty
import random
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

AREAS = ("reader", "compare", "lint", "plan", "outputs", "escapes", "concurrency", "secrets")
OK_CODES = frozenset({0, 1, 2})
NOBODY = 65534
# C0 controls except \t and \n, a \r that does not end a line, DEL, and C1 controls (UTF-8 encoded).
CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f]")
PAYLOADS = (b"\x1b]0;PWNED\x07", b"\x1b[2J", b"\x1b[31mRED", b"\x9b2J")
PAYLOAD = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED\u009b2J"  # the string injected by the escape tries


@dataclass
class Config:
    quick: bool
    work: Path
    timeout: float
    rss_mb: float  # peak resident memory above this is a failure (memory blow-up)
    as_mb: float  # RLIMIT_AS: the hard cap that keeps a blow-up from hurting the machine
    jobs: int
    seed: int


@dataclass
class Outcome:
    code: int | None  # None: killed after the timeout
    signal: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    rss_mb: float
    timed_out: bool


@dataclass
class Try:
    area: str
    name: str
    argv: list[str]  # after `ddp-doctor`
    cwd: Path
    codes: frozenset[int] = OK_CODES
    check: Callable[[Outcome], list[str]] | None = None
    victims: dict[Path, bytes] = field(default_factory=dict)  # planted symlink targets: must not change
    timeout: float | None = None
    as_nobody: bool = False
    on_pty: bool = False  # run on a pseudo-terminal (escape tries: the payloads must not reach it)
    controls_ok: bool = False  # the training command's own output passes through (`run`)
    env: dict[str, str] | None = None
    secrets: tuple[str, ...] = ()
    scan: tuple[Path, ...] = ()  # files/dirs that must not contain `secrets` afterwards
    runner: Callable[[Try, Config], list[str]] | None = None  # custom (several processes at once)


# --- running one command -----------------------------------------------------------------------------


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORCE_COLOR", "DDP_DOCTOR"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        COLUMNS="120",
        PYTHONDONTWRITEBYTECODE="1",
        OMP_NUM_THREADS="1",
    )
    env.pop("NO_COLOR", None)
    env.update(extra or {})
    return env


def _limit(pid: int, cfg: Config) -> None:
    """Address-space, file-size and core limits on a started command (set from outside with prlimit:
    a preexec_fn would run Python between fork and exec, which deadlocks in a threaded harness)."""
    as_bytes = int(cfg.as_mb * 2**20)
    for res, value in (
        (resource.RLIMIT_AS, as_bytes),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, 2**30),
    ):
        with contextlib.suppress(OSError, AttributeError):  # already exited; no prlimit here
            resource.prlimit(pid, res, (value, value))


def execute(
    argv: list[str],
    cwd: Path,
    cfg: Config,
    timeout: float | None = None,
    nobody: bool = False,
    on_pty: bool = False,
    env: dict[str, str] | None = None,
) -> Outcome:
    """Run ``ddp-doctor ARGV`` with limits; reap it with wait4 for its own peak RSS."""
    timeout = timeout or cfg.timeout
    cmd = [sys.executable, "-m", "ddp_doctor.cli", *argv]
    if nobody and os.geteuid() == 0 and shutil.which("setpriv"):
        # as an unprivileged user, so that file modes are enforced (the harness may run as root)
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        master, slave = pty.openpty() if on_pty else (None, None)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=base_env(env),
            stdin=subprocess.DEVNULL,
            stdout=slave if slave is not None else out,
            stderr=slave if slave is not None else err,
            start_new_session=True,
        )
        _limit(proc.pid, cfg)
        captured = bytearray()
        if slave is not None:
            os.close(slave)

        def drain(wait: float) -> bool:
            """Read what the pseudo-terminal has (bounded); False when it is closed or quiet."""
            ready, _, _ = select.select([master], [], [], wait)
            if not ready:
                return False
            try:
                chunk = os.read(master, 65536)  # type: ignore[arg-type]
            except OSError:
                return False
            captured.extend(chunk[: max(0, 2**22 - len(captured))])
            return bool(chunk)

        timed_out, status, usage = False, 0, None
        while True:
            if master is not None:
                drain(0.02)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                timed_out = True
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            if master is None:
                time.sleep(0.02)
        proc.returncode = 0  # reaped by wait4 above; keep Popen from waiting again
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything the command left behind in its session
        if master is not None:
            while drain(0.05):
                pass
            os.close(master)
        seconds = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(2**24), err.read(2**24)
    if on_pty:
        stdout = bytes(captured).replace(b"\r\n", b"\n")
    code = sig = None
    if not timed_out:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
        else:
            code = os.WEXITSTATUS(status)
    return Outcome(code, sig, stdout, stderr, seconds, usage.ru_maxrss / 1024 if usage else 0.0, timed_out)


def judge(t: Try, o: Outcome, cfg: Config) -> list[str]:
    """Every failure rule from the module docstring, applied to one outcome."""
    fails: list[str] = []
    both = o.stdout + b"\n" + o.stderr
    if o.timed_out:
        fails.append(f"hang: still running after {t.timeout or cfg.timeout:.0f} s")
    elif o.signal is not None:
        fails.append(f"killed by signal {signal.Signals(o.signal).name}")
    elif o.code not in t.codes:
        fails.append(f"exit {o.code}, expected one of {sorted(t.codes)}")
    if b"Traceback (most recent call last)" in both:
        last = [ln for ln in o.stderr.decode("utf-8", "replace").splitlines() if ln.strip()][-1:]
        fails.append(f"traceback: {last[0][:160] if last else '?'}")
    if o.rss_mb > cfg.rss_mb:
        fails.append(f"memory: peak RSS {o.rss_mb:.0f} MB > {cfg.rss_mb:.0f} MB")
    if not t.controls_ok:
        if t.on_pty:
            hit = [p for p in PAYLOADS if p in both]
            if hit:
                fails.append(f"escape payload reached the terminal raw: {hit[0]!r}")
        else:
            m = CONTROL.search(both)
            if m:
                ctx = both[max(0, m.start() - 30) : m.end() + 10]
                fails.append(f"raw control character {m.group()!r} on stdout/stderr: ...{ctx!r}")
    for victim, before in t.victims.items():
        now = victim.read_bytes() if victim.is_file() else None
        if now != before:
            fails.append(f"output followed a symlink: {victim} changed")
    if t.secrets:
        leaked = sorted({s for s in t.secrets for p in t.scan for f in _files(p) if s.encode() in _read(f)})
        if leaked:
            fails.append(f"secret(s) written to a file: {leaked}")
    if t.check is not None and not o.timed_out and o.signal is None:
        try:
            fails.extend(t.check(o))
        except Exception as exc:  # an oracle that cannot read the output: report it, visibly
            fails.append(f"check could not run: {type(exc).__name__}: {exc}")
    return fails


def _files(p: Path) -> list[Path]:
    if p.is_symlink():
        return []
    if p.is_file():
        return [p]
    return [f for f in p.rglob("*") if f.is_file() and not f.is_symlink()] if p.is_dir() else []


def _read(p: Path) -> bytes:
    try:
        if not stat.S_ISREG(p.lstat().st_mode):
            return b""
        with open(p, "rb") as fh:
            return fh.read(2**26)
    except OSError:
        return b""


def run_try(t: Try, cfg: Config) -> dict[str, object]:
    if t.runner is not None:
        t0 = time.monotonic()
        try:
            fails = t.runner(t, cfg)
        except Exception as exc:
            fails = [f"harness error: {type(exc).__name__}: {exc}"]
        return {"area": t.area, "name": t.name, "failures": fails, "seconds": round(time.monotonic() - t0, 2)}
    o = execute(t.argv, t.cwd, cfg, t.timeout, t.as_nobody, t.on_pty, t.env)
    fails = judge(t, o, cfg)
    return {
        "area": t.area,
        "name": t.name,
        "argv": [a if len(a) < 200 else a[:200] + "…" for a in t.argv],
        "code": o.code,
        "seconds": round(o.seconds, 2),
        "rss_mb": round(o.rss_mb),
        "failures": fails,
        "stderr_tail": o.stderr[-300:].decode("utf-8", "replace") if fails else "",
    }


# --- oracles ---------------------------------------------------------------------------------------------


def load_json(o: Outcome) -> dict | None:
    if o.code != 0:
        return None
    return json.loads(o.stdout)


def visible_damage(run: Path) -> bool:
    """What a plain line parser sees: a run file that is not a regular file, a truncated last line,
    a line that is not a JSON object with a string `kind` (rank files) or a manifest that is not an
    object. Whitespace-only lines and the JSON constants NaN/Infinity are not counted."""
    man = run / "manifest.json"
    if man.is_symlink() or (man.exists() and not man.is_file()):
        return True
    if man.is_file():
        try:
            if not isinstance(json.loads(man.read_bytes()), dict):
                return True
        except (ValueError, RecursionError):
            return True
    ranks = run / "ranks"
    if ranks.is_symlink() or (ranks.exists() and not ranks.is_dir()):
        return True
    if not ranks.is_dir():
        return False
    for f in ranks.iterdir():
        if not re.fullmatch(r"rank-\d+\.jsonl", f.name):
            continue
        if f.is_symlink() or not f.is_file():
            return True
        data = f.read_bytes()
        if data and not data.endswith(b"\n"):
            return True
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                return True
            if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str):
                return True
    return False


def usable_rank(run: Path) -> bool:
    """A rank file whose first line is a valid header and which holds a valid step record: the run
    still has data, so `report` must give one (exit 0), not call it "not a run"."""
    ranks = run / "ranks"
    if ranks.is_symlink() or not ranks.is_dir():
        return False
    for f in ranks.iterdir():
        if f.is_symlink() or not f.is_file() or not re.fullmatch(r"rank-\d+\.jsonl", f.name):
            continue
        header = step = False
        for i, line in enumerate(f.read_bytes().split(b"\n")[:-1]):
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(rec, dict):
                continue
            header |= i == 0 and rec.get("kind") == "header"
            step |= rec.get("kind") == "step" and type(rec.get("step")) is int
        if header and step:
            return True
    return False


@dataclass
class Expect:
    """What a damaged run must give: exit codes, a listed problem (True / False / None: use the
    line-parser oracle), and an extra check of the JSON report."""

    codes: frozenset[int] = frozenset({0})
    problem: bool | None = True
    json_check: Callable[[dict], list[str]] | None = None


def reader_check(run: Path, fmt: str, exp: Expect, out: Path | None) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        if o.code != 0:
            return []
        want = exp.problem if exp.problem is not None else visible_damage(run)
        if fmt == "json":
            try:
                doc = json.loads(o.stdout)
            except ValueError as exc:
                return [f"--format json stdout is not JSON ({exc})"]
            probs = doc.get("run", {}).get("problems", [])
            fails = []
            if want and not probs:
                fails.append("silently wrong: damage not listed in run.problems")
            if exp.json_check:
                fails.extend(exp.json_check(doc))
            return fails
        text = o.stdout.decode("utf-8", "replace") if fmt == "text" else _read(out).decode("utf-8", "replace")  # type: ignore[arg-type]
        if fmt == "html" and not text:
            return ["exit 0 but no HTML written"]
        if want and "data quality" not in text.lower():
            return [f"silently wrong: no 'Data quality' section in the {fmt} report"]
        return []

    return check


# --- inputs: real runs of the reference trainer ------------------------------------------------------------


def make_real_run(
    out: Path, world: int, steps: int, level: str = "basic", extra: tuple[str, ...] = ()
) -> Path:
    """`ddp-doctor run` of the reference trainer (torchrun with `world` ranks, or one process)."""
    if out.exists():
        return out
    launch = (
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world)]
        if world > 1
        else [sys.executable]
    )
    cmd = [
        sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(out), "--level", level, "--every", "5", "--",
        *launch, "-m", "ddp_doctor.trainer", "--preset", "tiny", "--steps", str(steps), "--no-progress", *extra,
    ]  # fmt: skip
    p = subprocess.run(cmd, env=base_env(), capture_output=True, timeout=600)
    if p.returncode != 0 or not (out / "ranks").is_dir():
        raise SystemExit(
            f"reference run failed ({p.returncode}): {p.stderr[-2000:].decode(errors='replace')}"
        )
    return out


def rank_path(run: Path, r: int) -> Path:
    return run / "ranks" / f"rank-{r:05d}.jsonl"


def records_of(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def put(p: Path, recs: list[object], raw: bool = False) -> None:
    p.write_text("".join((r if raw else json.dumps(r)) + "\n" for r in recs))  # type: ignore[operator]


def edit(
    run: Path, fn: Callable[[dict], object], ranks: tuple[int, ...] = (0, 1), kinds: tuple[str, ...] = ()
) -> None:
    """Replace each record (of `kinds`, all if empty) of the given ranks by fn(record) (a dict, a raw
    JSON string, a list of records, or None to drop it)."""
    for r in ranks:
        p = rank_path(run, r)
        out: list[str] = []
        for rec in records_of(p):
            new = fn(rec) if not kinds or rec.get("kind") in kinds else rec
            for item in new if isinstance(new, list) else [new]:
                if item is not None:
                    out.append(item if isinstance(item, str) else json.dumps(item))
        p.write_text("".join(x + "\n" for x in out))


def edit_manifest(run: Path, fn: Callable[[dict], object]) -> None:
    m = run / "manifest.json"
    new = fn(json.loads(m.read_text()))
    m.write_text(new if isinstance(new, str) else json.dumps(new))


def set_field(kind: str, key: str, value: object, which: str = "first") -> Callable[[Path], None]:
    """Set `key` of the first (or every) record of `kind` on rank 0 to `value`."""

    def damage(run: Path) -> None:
        seen = [False]

        def fn(rec: dict) -> dict:
            if which == "every" or not seen[0]:
                seen[0] = True
                rec = dict(rec, **{key: value})
            return rec

        edit(run, fn, ranks=(0,), kinds=(kind,))

    return damage


def deep(n: int, open_: str = "[", close: str = "]") -> str:
    return open_ * n + close * n


def steps_json(expected: int) -> Callable[[dict], list[str]]:
    def check(doc: dict) -> list[str]:
        got = doc["run"].get("optimizer_steps")
        return [] if got == expected else [f"silently wrong: optimizer_steps {got}, expected {expected}"]

    return check


def problem_mentions(*words: str) -> Callable[[dict], list[str]]:
    def check(doc: dict) -> list[str]:
        probs = [p.lower() for p in doc["run"]["problems"]]
        if any(all(w.lower() in p for w in words) for p in probs):
            return []
        return [f"silently wrong: no problem mentions {' + '.join(words)}"]

    return check


def all_of(*checks: Callable[[dict], list[str]]) -> Callable[[dict], list[str]]:
    return lambda doc: [f for c in checks for f in c(doc)]


def not_clean_exit(doc: dict) -> list[str]:
    st = doc["run"].get("exit_status") or {}
    return (
        []
        if st.get("completed") is not True or doc["run"]["problems"]
        else ["silently wrong: reported as clean"]
    )


def all_not_measured(doc: dict) -> list[str]:
    bad = [f["id"] for f in doc["findings"] if f["status"] in ("confirmed", "ruled-out")]
    return [f"silently wrong: verdicts without a single step: {bad[:4]}"] if bad else []


def no_confirmed(*ids_like: str) -> Callable[[dict], list[str]]:
    def check(doc: dict) -> list[str]:
        bad = [
            f["id"]
            for f in doc["findings"]
            if f["status"] == "confirmed" and any(i in f["id"] for i in ids_like)
        ]
        return [f"silently wrong: {bad} confirmed" for _ in bad[:1]]

    return check


def reader_classes(base: Path, cfg: Config) -> list[tuple[str, Callable[[Path], None], Expect]]:
    """(name, damage applied to a copy of a real run, expectation). The classes of issue 10 item 5 and
    more an outside tester tries."""
    n_steps = sum(1 for r in records_of(rank_path(base, 0)) if r.get("kind") == "step")
    damaged, data_ok = Expect(), Expect(problem=None)
    maybe_not_a_run = Expect(frozenset({0, 2}))

    def header_only(run: Path) -> None:
        for r in (0, 1):
            put(rank_path(run, r), records_of(rank_path(run, r))[:1])

    def empty(which: tuple[int, ...]) -> Callable[[Path], None]:
        return lambda run: [rank_path(run, r).write_bytes(b"") for r in which] and None

    def live_before_first_step(run: Path) -> None:
        edit_manifest(run, lambda m: {k: v for k, v in m.items() if k not in ("end", "exit_code", "ranks")})
        for r in (0, 1):
            recs = records_of(rank_path(run, r))
            put(
                rank_path(run, r),
                recs[: next(i for i, x in enumerate(recs) if x["kind"] in ("step", "update"))],
            )

    def in_progress(run: Path) -> None:
        edit_manifest(run, lambda m: {k: v for k, v in m.items() if k not in ("end", "exit_code", "ranks")})
        for r in (0, 1):
            recs = records_of(rank_path(run, r))
            put(rank_path(run, r), recs[: len(recs) // 2])

    def fifo(rel: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            p = run / rel
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            os.mkfifo(p)

        return damage

    def link(rel: str, target: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            p = run / rel
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            p.symlink_to(target)

        return damage

    def loop2(run: Path) -> None:
        a, b = rank_path(run, 1), run / "ranks" / "other.jsonl"
        a.unlink()
        a.symlink_to(b.name)
        b.symlink_to(a.name)

    def as_dir(rel: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            p = run / rel
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            (p / "x").mkdir(parents=True)

        return damage

    def ranks_is_file(run: Path) -> None:
        shutil.rmtree(run / "ranks")
        (run / "ranks").write_text("not a directory\n")

    def unreadable(rel: str) -> Callable[[Path], None]:
        return lambda run: (run / rel).chmod(0)

    def deep_losses(n: int) -> Callable[[Path], None]:
        return set_field_raw("step", "losses", deep(n))

    def set_field_raw(kind: str, key: str, raw: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            seen = [False]

            def fn(rec: dict) -> object:
                if seen[0]:
                    return rec
                seen[0] = True
                return json.dumps(dict(rec, **{key: "__RAW__"})).replace('"__RAW__"', raw)

            edit(run, fn, ranks=(0,), kinds=(kind,))

        return damage

    def dup_steps(run: Path) -> None:
        edit(run, lambda r: [r, r], kinds=("step",))

    def whole_file_twice(run: Path) -> None:
        p = rank_path(run, 1)
        p.write_bytes(p.read_bytes() * 2)

    def header_says(which: int, **kw: object) -> Callable[[Path], None]:
        return lambda run: edit(run, lambda r: dict(r, **kw), ranks=(which,), kinds=("header",))

    def extra_rank(name: str) -> Callable[[Path], None]:
        return lambda run: shutil.copy(rank_path(run, 1), run / "ranks" / name)

    def short_rank(run: Path) -> None:
        recs = records_of(rank_path(run, 1))
        put(rank_path(run, 1), [r for r in recs if r["kind"] != "end"][: len(recs) // 2])

    def sigkilled(code: int) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            short_rank(run)
            edit_manifest(run, lambda m: dict(m, exit_code=code))

        return damage

    def string_losses(run: Path) -> None:
        edit(
            run, lambda r: dict(r, losses=["abc"] * len(r.get("losses") or [0])), ranks=(0,), kinds=("step",)
        )

    def delete(rel: str) -> Callable[[Path], None]:
        return lambda run: shutil.rmtree(run / rel) if (run / rel).is_dir() else (run / rel).unlink()

    def truncate_last(run: Path) -> None:
        p = rank_path(run, 0)
        p.write_bytes(p.read_bytes()[:-40])

    def crlf(run: Path) -> None:
        for r in (0, 1):
            p = rank_path(run, r)
            p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))

    def prefix(rel: str, data: bytes) -> Callable[[Path], None]:
        return lambda run: (run / rel).write_bytes(data + (run / rel).read_bytes())

    def suffix(rel: str, data: bytes) -> Callable[[Path], None]:
        return lambda run: (run / rel).write_bytes((run / rel).read_bytes() + data)

    def long_line(n: int) -> Callable[[Path], None]:
        return suffix("ranks/rank-00000.jsonl", b'{"kind": "note", "pad": "' + b"x" * n + b'"}\n')

    def many_losses(n: int) -> Callable[[Path], None]:
        return set_field_raw("step", "losses", "[" + ",".join(["1.5"] * n) + "]")

    def many_rank_files(n: int) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            head = records_of(rank_path(run, 1))[0]
            for r in range(2, n):
                put(rank_path(run, r), [dict(head, rank=r)])

        return damage

    def junk_files(n: int) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            for i in range(n):
                (run / "ranks" / f"junk-{i}.txt").write_text("x")

        return damage

    def manifest_raw(text: str) -> Callable[[Path], None]:
        return lambda run: (run / "manifest.json").write_text(text)

    def manifest_field(key: str, value: object) -> Callable[[Path], None]:
        return lambda run: edit_manifest(run, lambda m: dict(m, **{key: value}))

    def all_fields_null(run: Path) -> None:
        seen = [0]

        def fn(rec: dict) -> dict:
            seen[0] += 1
            return {k: (v if k == "kind" else None) for k, v in rec.items()} if seen[0] == 3 else rec

        edit(run, fn, ranks=(0,), kinds=("step",))

    def big_run(copies: int) -> Callable[[Path], None]:
        """A long real run: the step records repeated with new step numbers (cache path, > 4 MB)."""

        def damage(run: Path) -> None:
            for r in (0, 1):
                recs = records_of(rank_path(run, r))
                steps = [x for x in recs if x["kind"] == "step"]
                head = [x for x in recs if x["kind"] not in ("step", "end")]
                out = head + [dict(s, step=k * len(steps) + s["step"]) for k in range(copies) for s in steps]
                put(rank_path(run, r), out)

        return damage

    def sparse(size: int) -> Callable[[Path], None]:
        """A rank file preallocated to `size` bytes (a file system after a crash): holes read as NUL."""
        return lambda run: os.truncate(rank_path(run, 1), size)

    def exits_file(text: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            (run / "launcher").mkdir(exist_ok=True)
            (run / "launcher" / "exits-vm-1-1.json").write_text(text)

        return damage

    def metrics(text: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            (run / "trainer").mkdir(exist_ok=True)
            (run / "trainer" / "metrics.jsonl").write_text(text)

        return damage

    step_dict_nesting = "{" + '"a":{' * 50000 + "}" * 50000 + "}"
    classes: list[tuple[str, Callable[[Path], None], Expect]] = [
        ("pristine", lambda run: None, Expect(problem=False, json_check=steps_json(n_steps))),
        ("header-only", header_only, Expect(json_check=all_not_measured)),
        ("empty-rank-files", empty((0, 1)), maybe_not_a_run),
        ("one-empty-rank-file", empty((1,)), damaged),
        ("live-before-first-step", live_before_first_step, Expect(problem=None, json_check=all_not_measured)),
        ("live-half-way", in_progress, Expect(problem=None)),
        ("fifo-rank-file", fifo("ranks/rank-00001.jsonl"), damaged),
        ("fifo-manifest", fifo("manifest.json"), damaged),
        ("fifo-ranks-dir", fifo("ranks"), maybe_not_a_run),
        ("symlink-loop-rank", loop2, damaged),
        ("symlink-self-loop-manifest", link("manifest.json", "manifest.json"), damaged),
        ("symlink-ranks-dir-to-itself", link("ranks", "ranks"), maybe_not_a_run),
        ("rank-file-is-dev-zero", link("ranks/rank-00001.jsonl", "/dev/zero"), damaged),
        ("rank-file-is-dev-urandom", link("ranks/rank-00001.jsonl", "/dev/urandom"), damaged),
        ("manifest-is-dev-zero", link("manifest.json", "/dev/zero"), damaged),
        ("manifest-is-etc-passwd", link("manifest.json", "/etc/passwd"), damaged),
        ("rank-file-links-to-a-dir", link("ranks/rank-00001.jsonl", "/"), damaged),
        ("directory-as-rank-file", as_dir("ranks/rank-00001.jsonl"), damaged),
        ("directory-as-manifest", as_dir("manifest.json"), damaged),
        ("ranks-is-a-file", ranks_is_file, maybe_not_a_run),
        ("deep-json-losses-100k", deep_losses(100_000), damaged),
        ("deep-json-manifest-100k", manifest_raw(deep(100_000)), damaged),
        ("deep-json-object-50k", set_field_raw("config", "module", step_dict_nesting), data_ok),
        ("deep-json-500", deep_losses(500), data_ok),
        ("step-1e30", set_field("step", "step", 1e30), damaged),
        ("step-2^62", set_field("step", "step", 2**62), damaged),
        ("step-negative", set_field("step", "step", -5), damaged),
        ("world-size-1e9", header_says(0, world_size=10**9), damaged),
        ("world-size-2^62-float", header_says(1, world_size=4.6e18), damaged),
        ("world-size-zero", header_says(0, world_size=0), damaged),
        ("micro-steps-1e9", set_field("step", "micro_steps", 10**9), damaged),
        ("micro-steps-negative", set_field("step", "micro_steps", -3), damaged),
        ("int-with-5000-digits", set_field_raw("step", "dt", "9" * 5000), damaged),
        ("float-1e400", set_field_raw("step", "dt", "1e400"), data_ok),
        ("nan-literals", set_field_raw("step", "losses", "[NaN, Infinity, -Infinity]"), data_ok),
        ("step-as-string", set_field("step", "step", "3"), damaged),
        ("step-as-bool", set_field("step", "step", True), damaged),
        ("kind-not-a-string", set_field("step", "kind", 5), damaged),
        ("kind-a-list", set_field("step", "kind", ["step"]), damaged),
        ("record-is-an-array", lambda run: edit(run, lambda r: "[1, 2, 3]", ranks=(0,), kinds=("update",)), damaged),
        ("record-is-a-string", lambda run: edit(run, lambda r: '"step"', ranks=(1,), kinds=("replica",)), damaged),
        ("losses-a-dict", set_field("step", "losses", {"a": 1}), damaged),
        ("losses-a-string", set_field("step", "losses", "0.5,0.6"), damaged),
        ("all-fields-null", all_fields_null, damaged),
        ("lists-shorter-than-micro-steps", set_field("step", "samples", [1]), Expect(problem=None)),
        ("many-losses-200k", many_losses(200_000), Expect(problem=None)),
        ("header-rank-string", header_says(0, rank="0"), damaged),
        ("header-world-size-2.5", header_says(0, world_size=2.5), damaged),
        ("header-every-zero", header_says(0, every=0), Expect(problem=None)),
        ("manifest-env-a-list", manifest_field("env", ["A=1"]), damaged),
        ("manifest-command-a-string", manifest_field("command", "python train.py"), damaged),
        ("manifest-command-a-dict", manifest_field("command", {"a": [1]}), damaged),
        ("manifest-versions-a-list", manifest_field("versions", [1, 2]), damaged),
        ("manifest-exit-code-1e30", manifest_field("exit_code", 1e30), damaged),
        ("manifest-every-zero", manifest_field("every", 0), Expect(problem=None)),
        ("manifest-ranks-1e9", manifest_field("ranks", 10**9), damaged),
        ("manifest-a-list", manifest_raw("[]"), damaged),
        ("manifest-null", manifest_raw("null"), damaged),
        ("manifest-empty", manifest_raw(""), damaged),
        ("manifest-truncated", lambda run: manifest_raw((run / "manifest.json").read_text()[:60])(run), damaged),
        ("manifest-missing", delete("manifest.json"), damaged),
        ("schema-run-10", manifest_field("schema", "ddp-doctor.run/10"), Expect(json_check=problem_mentions("schema"))),
        ("schema-rank-10", header_says(0, schema="ddp-doctor.rank/10"), Expect(json_check=problem_mentions("schema"))),
        ("schema-garbage", manifest_field("schema", "garbage"), damaged),
        ("schema-a-number", header_says(1, schema=1), damaged),
        ("duplicate-steps", dup_steps, Expect(json_check=steps_json(n_steps))),
        ("rank-file-written-twice", whole_file_twice, Expect(json_check=steps_json(n_steps))),
        ("header-rank-mismatch", header_says(1, rank=0), damaged),
        ("headers-disagree-world-size", header_says(1, world_size=3), damaged),
        ("rank-beyond-world-size", extra_rank("rank-00007.jsonl"), damaged),
        ("two-names-for-one-rank", extra_rank("rank-1.jsonl"), damaged),
        ("short-rank-without-end", short_rank, Expect(json_check=problem_mentions("1"))),
        ("sigkilled-rank", sigkilled(-9), Expect(json_check=not_clean_exit)),
        ("sigkilled-rank-exit-1", sigkilled(1), Expect(json_check=not_clean_exit)),
        ("string-losses", string_losses, Expect(json_check=no_confirmed("nonfinite", "non-finite"))),
        ("missing-rank-1", delete("ranks/rank-00001.jsonl"), damaged),
        ("missing-ranks-dir", delete("ranks"), maybe_not_a_run),
        ("truncated-last-line", truncate_last, damaged),
        ("crlf-line-endings", crlf, Expect(problem=None, json_check=steps_json(n_steps))),
        ("utf8-bom", prefix("ranks/rank-00000.jsonl", b"\xef\xbb\xbf"), Expect(problem=None)),
        ("nul-block-after-crash", suffix("ranks/rank-00000.jsonl", b"\0" * 65536), damaged),
        ("invalid-utf8-line", suffix("ranks/rank-00001.jsonl", b'{"kind": "step", "x": "\xff\xfe"}\n'), data_ok),
        ("blank-lines", suffix("ranks/rank-00001.jsonl", b"\n\n   \n"), data_ok),
        ("unknown-kind", suffix("ranks/rank-00001.jsonl", b'{"kind": "zzz", "step": 1}\n'), Expect(problem=False)),
        ("long-line-8MB", long_line(8 * 2**20), data_ok),
        ("rank-files-300", many_rank_files(300), damaged),
        ("junk-files-2000", junk_files(2000), Expect(problem=None)),
        ("exits-file-garbage", exits_file("{not json"), damaged),
        ("exits-file-wrong-types", exits_file('{"failures": [1, 2], "host": 5}'), damaged),
        ("exits-file-deep", exits_file('{"failures": ' + deep(100_000, "{\"a\":", "}") + "}"), damaged),
        ("metrics-string-values", metrics('{"step": "x", "loss": "abc"}\n{"step": 1e308, "loss": [1]}\n'), Expect(problem=None)),
        ("metrics-deep", metrics(deep(100_000) + "\n"), Expect(problem=None)),
    ]  # fmt: skip
    if not cfg.quick:
        classes += [
            ("big-run-cached", big_run(200), Expect(problem=False)),
            ("unreadable-rank-file", unreadable("ranks/rank-00001.jsonl"), damaged),
            ("unreadable-manifest", unreadable("manifest.json"), damaged),
            ("sparse-4GiB-of-nul-after-crash", sparse(4 << 30), damaged),
        ]
    if cfg.quick:
        classes = [c for c in classes if c[0] in QUICK_READER]
    classes += random_damage_classes(cfg)
    return classes


def random_damage_classes(cfg: Config) -> list[tuple[str, Callable[[Path], None], Expect]]:
    """Byte-level damage at random places of the real run's files (the line-parser oracle decides
    whether a problem must be listed)."""
    rng = random.Random(cfg.seed)
    out: list[tuple[str, Callable[[Path], None], Expect]] = []
    ops = ("flip", "truncate", "zero-range", "insert", "drop-line", "dup-line", "swap-lines", "splice")
    for i in range(3 if cfg.quick else 60):
        seed = rng.randrange(2**31)
        kinds = [rng.choice(ops) for _ in range(rng.randint(1, 3))]

        def damage(run: Path, seed: int = seed, kinds: list[str] = kinds) -> None:
            r = random.Random(seed)
            files = [run / "manifest.json", rank_path(run, 0), rank_path(run, 1)]
            for op in kinds:
                p = r.choice(files)
                data = bytearray(p.read_bytes())
                if not data:
                    continue
                at = r.randrange(len(data))
                lines = data.split(b"\n")
                if op == "flip":
                    for _ in range(r.randint(1, 8)):
                        data[r.randrange(len(data))] ^= 1 << r.randrange(8)
                elif op == "truncate":
                    del data[at:]
                elif op == "zero-range":
                    data[at : at + r.randint(1, 4096)] = b"\0" * len(data[at : at + 4096])
                elif op == "insert":
                    data[at:at] = bytes(r.randrange(256) for _ in range(r.randint(1, 64)))
                elif op in ("drop-line", "dup-line", "swap-lines") and len(lines) > 2:
                    k = r.randrange(len(lines) - 1)
                    if op == "drop-line":
                        del lines[k]
                    elif op == "dup-line":
                        lines.insert(k, lines[k])
                    else:
                        j = r.randrange(len(lines) - 1)
                        lines[k], lines[j] = lines[j], lines[k]
                    data = bytearray(b"\n".join(lines))
                elif op == "splice":  # a piece of one file lands in the middle of another (a torn write)
                    q = r.choice(files).read_bytes()
                    a = r.randrange(len(q) or 1)
                    data[at:at] = q[a : a + r.randint(1, 512)]
                p.write_bytes(bytes(data))

        out.append((f"random-{i:02d}-{'+'.join(kinds)}", damage, Expect(frozenset({0, 2}), problem=None)))
    return out


def reader_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "reader"
    root.mkdir(parents=True, exist_ok=True)
    tries: list[Try] = []
    for name, damage, exp in reader_classes(base, cfg):
        run = root / name
        shutil.copytree(base, run, symlinks=True)
        try:
            damage(run)
        except FileNotFoundError:  # a class for rank 1 on a one-process run: not applicable
            _rmtree(run)
            continue
        nobody = name.startswith("unreadable")
        if nobody:
            _open_to_nobody(run, keep=(run / "ranks" / "rank-00001.jsonl", run / "manifest.json"))
        codes = exp.codes
        if exp.codes == frozenset({0, 2}) and usable_rank(run):
            codes = frozenset({0})  # the run still has a header and steps: it must be reported
        fmts = ("text", "json", "html") if not cfg.quick or name in QUICK_ALL_FORMATS else ("json",)
        for fmt in fmts:
            out = root / f"{name}.{fmt}.out.html" if fmt == "html" else None
            argv = ["report", str(run), "--format", fmt] + (["--output", str(out)] if out else [])
            slow = ("big-run-cached", "long-line-8MB", "rank-files-300", "sparse-4GiB-of-nul-after-crash")
            timeout = 120 if name in slow else None
            tries.append(Try("reader", f"{name} [{fmt}]", argv, root, codes, reader_check(run, fmt, exp, out),
                             timeout=timeout, as_nobody=nobody))  # fmt: skip
        if name == "big-run-cached":  # once more, read from its column cache, then with the cache damaged
            tries.append(Try("reader", f"{name} [json, from cache]", ["report", str(run), "--format", "json"], root,
                             frozenset({0}), reader_check(run, "json", exp, None), timeout=120))  # fmt: skip
    return tries


# --quick: the CI subset — one representative of every class of issue 10 item 5
QUICK_ALL_FORMATS = ("pristine", "header-only", "fifo-rank-file")
QUICK_READER = (
    *QUICK_ALL_FORMATS,
    "empty-rank-files",
    "live-before-first-step",
    "fifo-manifest",
    "symlink-loop-rank",
    "rank-file-is-dev-zero",
    "directory-as-rank-file",
    "deep-json-losses-100k",
    "step-2^62",
    "world-size-1e9",
    "micro-steps-1e9",
    "int-with-5000-digits",
    "kind-not-a-string",
    "manifest-env-a-list",
    "schema-run-10",
    "duplicate-steps",
    "header-rank-mismatch",
    "rank-beyond-world-size",
    "sigkilled-rank",
    "string-losses",
    "nul-block-after-crash",
    "exits-file-garbage",
)


def pick(items: list, quick: bool, every: int) -> list:
    """Every `every`-th item in --quick, all otherwise."""
    return items[::every] if quick else items


def _open_to_nobody(run: Path, keep: tuple[Path, ...] = ()) -> None:
    for p in [run.parent, run, *run.rglob("*")]:
        if p.is_symlink() or p in keep:
            continue
        p.chmod(0o777 if p.is_dir() else 0o644)


def compare_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "reader"
    names = ("header-only", "fifo-rank-file", "deep-json-losses-100k", "duplicate-steps", "sigkilled-rank",
             "manifest-missing", "string-losses", "step-2^62", "rank-file-is-dev-zero", "empty-rank-files",
             "ranks-is-a-file", "micro-steps-1e9", "world-size-1e9", "missing-rank-1")  # fmt: skip
    if cfg.quick:
        names = names[:2]
    tries = []
    for n in names:
        run = root / n
        for fmt in ("text", "json") if not cfg.quick else ("json",):
            codes = frozenset({0}) if usable_rank(run) else frozenset({0, 2})

            def check(o: Outcome, fmt: str = fmt) -> list[str]:
                if o.code == 0 and fmt == "json":
                    json.loads(o.stdout)
                return []

            tries.append(Try("compare", f"base vs {n} [{fmt}]", ["compare", str(base), str(run), "--format", fmt],
                             root, codes, check))  # fmt: skip
            tries.append(Try("compare", f"{n} vs base [{fmt}]", ["compare", str(run), str(base), "--format", fmt],
                             root, codes))  # fmt: skip
    return tries


def _start_trainer_run(out: Path, steps: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(out), "--", sys.executable, "-m",
           "torch.distributed.run", "--nproc_per_node", "2", "-m", "ddp_doctor.trainer", "--preset", "tiny",
           "--steps", str(steps), "--no-progress"]  # fmt: skip
    return subprocess.Popen(cmd, env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


def _step_lines(p: Path) -> int:
    try:
        return p.read_bytes().count(b'"kind":"step"')
    except OSError:
        return 0


def _live_polls(t: Try, cfg: Config) -> list[str]:
    """`report` polled again and again on a real run from before its first step to its end: every
    poll exits 0 (or 2 while no rank file exists yet) without a traceback."""
    out = t.cwd / "live"
    proc = _start_trainer_run(out, 20)
    fails: list[str] = []
    polls = 0
    try:
        while proc.poll() is None and polls < 60:
            o = execute(["report", str(out), "--format", "json"], t.cwd, cfg)
            polls += 1
            fails += [
                f"poll {polls}: {f}" for f in judge(Try("reader", "", [], t.cwd, frozenset({0, 2})), o, cfg)
            ]
            if o.code == 0:
                json.loads(o.stdout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    o = execute(["report", str(out), "--format", "json"], t.cwd, cfg)
    fails += judge(
        Try(
            "reader",
            "",
            [],
            t.cwd,
            frozenset({0}),
            check=reader_check(out, "json", Expect(problem=None), None),
        ),
        o,
        cfg,
    )
    t.name = f"{t.name} ({polls} polls)"
    return fails


def _sigkilled_rank(t: Try, cfg: Config) -> list[str]:
    """A real rank SIGKILLed mid-run: the report must not call the run clean."""
    out = t.cwd / "killed"
    proc = _start_trainer_run(out, 400)
    try:
        rank1 = out / "ranks" / "rank-00001.jsonl"
        deadline = time.monotonic() + 240
        while _step_lines(rank1) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        pid = json.loads(rank1.read_bytes().split(b"\n")[0])["pid"]
        os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    fails: list[str] = []
    for fmt in ("json", "text"):
        o = execute(["report", str(out), "--format", fmt], t.cwd, cfg)
        check = reader_check(out, fmt, Expect(json_check=not_clean_exit), None)
        fails += judge(Try("reader", "", [], t.cwd, frozenset({0}), check=check), o, cfg)
    return fails


# --- imported logs (report accepts trainer_state.json, TensorBoard, W&B offline) ---------------------------


def import_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "imports"
    root.mkdir(parents=True, exist_ok=True)
    cases = {
        "trainer_state-deep": deep(100_000),
        "trainer_state-wrong-types": '{"log_history": [1, "x", null, {"loss": "abc", "step": [1]}], "global_step": "9"}',
        "trainer_state-huge-steps": '{"log_history": [{"loss": 1.0, "step": 1e308}, {"loss": 2.0, "step": 99999999999999999999}]}',
        "trainer_state-log-history-dict": '{"log_history": {"a": 1}}',
        "trainer_state-not-json": "\x00\x01garbage",
        "trainer_state-empty": "",
    }
    tries = []
    for name, text in cases.items():
        d = root / name
        d.mkdir()
        (d / "trainer_state.json").write_text(text)
        tries.append(
            Try(
                "reader",
                f"import {name}",
                ["report", str(d / "trainer_state.json"), "--format", "json"],
                root,
            )
        )
    fifo = root / "trainer_state-fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "trainer_state.json")
    tries.append(
        Try("reader", "import trainer_state.json that is a FIFO", ["report", str(fifo)], root, frozenset({2}))
    )
    ev = root / "tb-garbage"
    ev.mkdir()
    (ev / "events.out.tfevents.1.host").write_bytes(random.Random(cfg.seed).randbytes(20000))
    tries.append(
        Try(
            "reader",
            "import tensorboard events of random bytes",
            ["report", str(ev), "--format", "json"],
            root,
        )
    )
    ev2 = root / "tb-fifo"
    ev2.mkdir()
    os.mkfifo(ev2 / "events.out.tfevents.2.host")
    tries.append(Try("reader", "import tensorboard event file that is a FIFO", ["report", str(ev2)], root))
    wb = root / "wandb" / "offline-run-20260101_000000-abc"
    (wb / "files").mkdir(parents=True)
    (wb / "run-abc.wandb").write_bytes(b"\xff" * 1000)
    (wb / "files" / "wandb-summary.json").write_text(deep(50_000))
    tries.append(
        Try("reader", "import wandb offline run of garbage", ["report", str(wb), "--format", "json"], root)
    )
    return tries if not cfg.quick else tries[:2]


# --- lint ---------------------------------------------------------------------------------------------------------

DDP_SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main():
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    model = DDP(torch.nn.Linear(10, 10).cuda(rank), device_ids=[rank])
    data = torch.utils.data.TensorDataset(torch.randn(100, 10))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 100)
    for epoch in range(3):
        for i, (x,) in enumerate(loader):
            loss = model(x.cuda(rank)).pow(2).mean() / 4
            loss.backward()
            sched.step()
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
            if rank == 0:
                print(f"epoch {epoch} step {i} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def _notebook(cells: object, **extra: object) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **extra})


def lint_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "lint"
    root.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parents[1]
    real = [repo / "examples" / "ddp_done_right.py", repo / "src/ddp_doctor/trainer/loop.py"]
    sources: dict[str, bytes] = {"ddp_script.py": DDP_SCRIPT.encode()}
    sources.update({p.name: p.read_bytes() for p in real if p.is_file()})
    files: dict[str, bytes | str] = {
        "empty.py": b"",
        "bom-only.py": b"\xef\xbb\xbf",
        "utf8-bom.py": b"\xef\xbb\xbf" + DDP_SCRIPT.encode(),
        "latin1-declared.py": b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + DDP_SCRIPT.encode(),
        "cp1252-declared.py": b"# vim: set fileencoding=cp1252 :\nx = '\x93quoted\x94'\n",
        "unknown-coding.py": b"# coding: no-such-codec\nx = 1\n",
        "utf16-bom.py": "import torch\nx = 1\n".encode("utf-16"),
        "undeclared-latin1.py": b"x = 'caf\xe9'\n",
        "nul-bytes.py": b"import torch\x00\x00\nx = 1\n",
        "elf-binary.py": b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 40,
        "tab-error.py": b"if True:\n\tx = 1\n        y = 2\n",
        "syntax-error.py": b"def f(:\n    pass\n",
        "cr-only-endings.py": DDP_SCRIPT.replace("\n", "\r").encode(),
        "mixed-endings.py": DDP_SCRIPT.replace("\n", "\r\n", 5).encode(),
        "form-feed.py": b"import torch\n\x0c\nx = 1\n",
        "deep-parens-200.py": ("x = " + "(" * 200 + "1" + ")" * 200 + "\n").encode(),
        "deep-lists-5000.py": ("x = " + deep(5000) + "\n").encode(),
        "unary-chain-100k.py": ("x = " + "-" * 100_000 + "1\n").encode(),
        "binop-chain-100k.py": ("x = " + "+".join(["a"] * 100_000) + "\n").encode(),
        "attr-chain-50k.py": ("x = a" + ".b" * 50_000 + "\n").encode(),
        "call-chain-20k.py": ("x = f" + "()" * 20_000 + "\n").encode(),
        "if-nesting-99.py": "".join(" " * i + "if x:\n" for i in range(99)).encode() + b" " * 99 + b"pass\n",
        "if-nesting-150.py": "".join(" " * i + "if x:\n" for i in range(150)).encode()
        + b" " * 150
        + b"pass\n",
        "long-line-4MB.py": b"x = '" + b"a" * 4 * 2**20 + b"'\n",
        "many-defs.py": "".join(f"def f{i}(model):\n    model.backward()\n" for i in range(20000)).encode(),
        "nb-source-int.ipynb": _notebook([{"cell_type": "code", "source": 5, "metadata": {}}]),
        "nb-source-list-of-ints.ipynb": _notebook([{"cell_type": "code", "source": [1, 2], "metadata": {}}]),
        "nb-source-null.ipynb": _notebook([{"cell_type": "code", "source": None}]),
        "nb-cells-dict.ipynb": _notebook({"a": 1}),
        "nb-cells-missing.ipynb": json.dumps({"nbformat": 4}),
        "nb-cell-is-string.ipynb": _notebook(["import torch"]),
        "nb-cell-type-list.ipynb": _notebook([{"cell_type": ["code"], "source": "x=1"}]),
        "nb-deep.ipynb": _notebook(
            [{"cell_type": "code", "source": "x = 1", "metadata": json.loads(deep(500))}]
        ).replace("[]", deep(100_000)),
        "nb-top-level-list.ipynb": "[1, 2, 3]",
        "nb-not-json.ipynb": "{ this is not json",
        "nb-empty.ipynb": "",
        "nb-binary.ipynb": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
        "nb-huge-cells.ipynb": _notebook([{"cell_type": "code", "source": DDP_SCRIPT} for _ in range(2000)]),
        "nb-ddp.ipynb": _notebook([{"cell_type": "code", "source": DDP_SCRIPT.splitlines(True)}]),
        "nb-magics.ipynb": _notebook(
            [{"cell_type": "code", "source": "%matplotlib inline\n!pip install x\nx = 1\n"}]
        ),
    }
    files = dict(pick(list(files.items()), cfg.quick, 6))
    rng = random.Random(cfg.seed + 1)
    for i in range(3 if cfg.quick else 60):  # random damage of real-style scripts
        name, src = rng.choice(sorted(sources.items()))
        data = bytearray(src)
        for _ in range(rng.randint(1, 6)):
            op, at = rng.randrange(4), rng.randrange(len(data) or 1)
            if op == 0:
                data[at] ^= 1 << rng.randrange(8)
            elif op == 1:
                del data[at : at + rng.randint(1, 200)]
            elif op == 2:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            else:
                piece = data[rng.randrange(len(data)) :][: rng.randint(1, 400)]
                data[at:at] = piece
        files[f"random-{i:02d}-{Path(name).stem}.py"] = bytes(data)
    tries: list[Try] = []
    each = root / "files"
    each.mkdir()
    for name, content in files.items():
        p = each / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        for fmt in (
            ("text", "json", "sarif") if name.startswith(("nb-ddp", "latin1", "random-00")) else ("json",)
        ):
            tries.append(
                Try(
                    "lint",
                    f"{name} [{fmt}]",
                    ["lint", str(p), "--format", fmt],
                    root,
                    check=_lint_check(name, fmt),
                    timeout=120 if name.startswith(("nb-huge", "many-defs")) else None,
                )
            )
    # whole directories: every file at once, FIFOs, loops, unreadable files, hostile config
    tree = root / "tree"
    shutil.copytree(each, tree)
    os.mkfifo(tree / "fifo.py")
    os.mkfifo(tree / "fifo.ipynb")
    (tree / "loop").symlink_to(".")
    (tree / "up").symlink_to("..")
    (tree / "dangling.py").symlink_to("does-not-exist.py")
    (tree / "dir.py").mkdir()
    (tree / "self.py").symlink_to("self.py")
    tries.append(
        Try(
            "lint",
            "directory with FIFOs, symlink loops, dir.py, every damaged file",
            ["lint", str(tree)],
            root,
            timeout=180,
        )
    )
    tries.append(
        Try(
            "lint",
            "same directory --no-project",
            ["lint", str(tree), "--no-project", "--format", "json"],
            root,
            timeout=180,
        )
    )
    tries.append(
        Try("lint", "FIFO named on the command line", ["lint", str(tree / "fifo.py")], root, frozenset({2}))
    )
    tries.append(
        Try(
            "lint",
            "symlink loop named on the command line",
            ["lint", str(tree / "self.py")],
            root,
            frozenset({2}),
        )
    )
    tries.append(
        Try("lint", "/dev/zero named on the command line", ["lint", "/dev/zero"], root, frozenset({2}))
    )
    tries.append(Try("lint", "a directory named x.py", ["lint", str(tree / "dir.py")], root, frozenset({0})))
    for cname, toml in {
        "toml-invalid": "[tool.ddp-doctor\nselect = ",
        "toml-select-int": "[tool.ddp-doctor]\nselect = 5\n",
        "toml-unknown-id": '[tool.ddp-doctor]\nselect = ["NOPE-123"]\n',
        "toml-ignore-table": "[tool.ddp-doctor]\nignore = {a = 1}\n",
        "toml-deep": "[tool.ddp-doctor]\nx = " + deep(5000) + "\n",
        "toml-binary": "\x00\xff\xfe",
        "toml-tool-not-a-table": "tool = 5\n",
        "toml-section-a-string": '[tool]\n"ddp-doctor" = "x"\n',
        "toml-fifo": None,
    }.items():
        proj = root / cname
        proj.mkdir()
        (proj / "train.py").write_text(DDP_SCRIPT)
        if toml is None:
            os.mkfifo(proj / "pyproject.toml")
        else:
            (proj / "pyproject.toml").write_bytes(toml.encode("latin-1"))
        tries.append(Try("lint", f"project with {cname}", ["lint", str(proj)], root))
    # --fix: keeps line endings and encoding, refuses read-only files clearly, never follows a symlink
    fixable = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nm = DDP(torch.nn.Linear(1, 1), find_unused_parameters=True)\n"
    for fname, data in {
        "fix-crlf.py": (DDP_SCRIPT + fixable).replace("\n", "\r\n").encode(),
        "fix-latin1.py": b"# coding: latin-1\n# caf\xe9\n" + (DDP_SCRIPT + fixable).encode(),
    }.items():
        p = root / fname
        p.write_bytes(data)
        tries.append(Try("lint", f"--fix {fname} keeps bytes it does not fix", ["lint", "--fix", str(p)], root,
                         check=_fix_keeps(p, data)))  # fmt: skip
    ro = root / "ro"
    ro.mkdir()
    (ro / "fix-readonly.py").write_text(DDP_SCRIPT)
    (ro / "fix-readonly.py").chmod(0o444)
    ro.chmod(0o555)
    (root).chmod(0o755)
    cfg.work.chmod(0o755)
    tries.append(Try("lint", "--fix on a read-only file in a read-only dir (as nobody)", ["lint", "--fix", str(ro / "fix-readonly.py")],
                     root, frozenset({2}), as_nobody=True))  # fmt: skip
    if cfg.quick:
        extra = ("directory with FIFOs", "FIFO named", "project with toml-deep", "project with toml-fifo")
        tries = [t for t in tries if t.name.endswith("]") or t.name.startswith(extra) or "--fix" in t.name]
    return tries


def _lint_check(name: str, fmt: str) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        fails = []
        if fmt in ("json", "sarif") and o.code in (0, 1, 2) and o.stdout.strip():
            try:
                json.loads(o.stdout)
            except ValueError:
                fails.append(f"--format {fmt} stdout is not JSON")
        if name.startswith(("latin1-declared", "cp1252-declared", "utf8-bom")) and o.code == 2:
            fails.append("silently wrong: a file in its declared encoding was refused")
        return fails

    return check


def _fix_keeps(p: Path, before: bytes) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        after = p.read_bytes()
        fails = []
        if b"\r\n" in before and after.replace(b"\r\n", b"").count(b"\n"):
            fails.append("--fix turned CRLF line endings into LF")
        if b"caf\xe9" in before and b"caf\xe9" not in after:
            fails.append("--fix changed the file's declared encoding")
        return fails

    return check


# --- plan ------------------------------------------------------------------------------------------------------------


def plan_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "plan"
    root.mkdir(parents=True, exist_ok=True)
    good = {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 1376,
            "vocab_size": 32000, "num_key_value_heads": 8}  # fmt: skip
    configs: dict[str, str | None] = {
        "zero-heads": json.dumps(dict(good, num_attention_heads=0)),
        "zero-kv-heads": json.dumps(dict(good, num_key_value_heads=0)),
        "heads-above-hidden": json.dumps(dict(good, num_attention_heads=1024)),
        "hidden-1e300": json.dumps(dict(good, hidden_size=1e300)),
        "layers-2^62": json.dumps(dict(good, num_hidden_layers=2**62)),
        "vocab-5000-digits": json.dumps(good).replace("32000", "9" * 5000),
        "negative": json.dumps(dict(good, hidden_size=-512)),
        "fractional": json.dumps(dict(good, hidden_size=511.5)),
        "strings": json.dumps(dict(good, hidden_size="512")),
        "bools": json.dumps(dict(good, num_hidden_layers=True)),
        "nulls": json.dumps(dict(good, intermediate_size=None)),
        "nan": json.dumps(good).replace("1376", "NaN"),
        "infinity": json.dumps(good).replace("1376", "Infinity"),
        "missing-fields": json.dumps({"hidden_size": 512}),
        "top-level-list": "[1, 2]",
        "deep": deep(100_000),
        "deep-object": '{"a":' * 100_000 + "1" + "}" * 100_000,
        "empty": "",
        "binary": "\x00\x01\x02\xff",
        "huge-20MB": json.dumps(dict(good, pad="x" * 20 * 2**20)),
        "fifo": None,
    }
    configs = dict(pick(list(configs.items()), cfg.quick, 5))
    tries = []
    for name, text in configs.items():
        p = root / f"{name}.json"
        if text is None:
            os.mkfifo(p)
        else:
            p.write_bytes(text.encode("utf-8", "surrogatepass"))
        tries.append(
            Try(
                "plan",
                f"--model {name}.json",
                ["plan", "--model", str(p), "--gpus", "8", "--gpu", "a100-80gb"],
                root,
            )
        )
    tries.append(
        Try(
            "plan", "--model a directory", ["plan", "--model", str(root), "--gpus", "1"], root, frozenset({2})
        )
    )
    tries.append(
        Try(
            "plan",
            "--model missing file",
            ["plan", "--model", str(root / "nope.json"), "--gpus", "1"],
            root,
            frozenset({2}),
        )
    )
    tries.append(
        Try(
            "plan", "--model /dev/zero", ["plan", "--model", "/dev/zero", "--gpus", "1"], root, frozenset({2})
        )
    )
    flags = {
        "--gpu-mem inf": ["--gpu-mem", "inf"],
        "--gpu-mem nan": ["--gpu-mem", "nan"],
        "--gpu-mem 1e308": ["--gpu-mem", "1e308"],
        "--gpu-mem -1": ["--gpu-mem", "-1"],
        "--gpu-mem 1e-300": ["--gpu-mem", "1e-300"],
        "--gpu-mem abc": ["--gpu-mem", "abc"],
        "--seq-len 2^62": ["--seq-len", str(2**62)],
        "--seq-len 10^30": ["--seq-len", str(10**30)],
        "--micro-batch 2^62": ["--micro-batch", str(2**62)],
        "--global-batch 2^62": ["--global-batch", str(2**62)],
        "--accum 2^62": ["--accum", str(2**62)],
        "--gpus 2^40": ["--gpus", str(2**40)],
        "--nodes 2^40": ["--nodes", str(2**40)],
        "--lora-rank 2^40": ["--lora-rank", str(2**40)],
        "--mfu nan": ["--mfu", "nan"],
        "--node-network-gbps inf": ["--node-network-gbps", "inf"],
        "--node-network-gbps nan": ["--node-network-gbps", "nan"],
        "--gpu unknown": ["--gpu", "zz-9000"],
        "--model unknown preset": ["--model", "llama-9000"],
    }
    flags = dict(pick(list(flags.items()), cfg.quick, 5))
    for name, extra in flags.items():
        argv = ["plan", "--model", "llama-7b", "--gpus", "8", "--gpu", "a100-80gb", *extra]
        if "--model" in extra:
            argv = ["plan", "--gpus", "8", *extra]
        for fmt in ("text", "json") if not cfg.quick else ("json",):
            tries.append(
                Try(
                    "plan",
                    f"{name} [{fmt}]",
                    [*argv, "--format", fmt],
                    root,
                    check=_plan_json if fmt == "json" else None,
                )
            )
    return tries


def _plan_json(o: Outcome) -> list[str]:
    if o.code == 0:
        json.loads(o.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"bare {c} in JSON")))
    return []


# --- outputs: every destination the tool writes ------------------------------------------------------------------


def output_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "outputs"
    root.mkdir(parents=True, exist_ok=True)
    victim_dir = root / "victims"
    victim_dir.mkdir()
    tries: list[Try] = []
    counter = [0]

    def victim() -> Path:
        counter[0] += 1
        v = victim_dir / f"victim-{counter[0]}.txt"
        v.write_bytes(b"precious data %d\n" % counter[0])
        return v

    def dest(kind: str) -> tuple[Path, dict[Path, bytes], frozenset[int]]:
        """A destination of the given kind; the victims that must not change; allowed exit codes."""
        counter[0] += 1
        d = root / f"d{counter[0]}"
        d.mkdir()
        if kind == "symlink":
            v = victim()
            (d / "out").symlink_to(v)
            return d / "out", {v: v.read_bytes()}, frozenset({0, 2})
        if kind == "dangling-symlink":
            (d / "out").symlink_to(victim_dir / f"created-{counter[0]}")
            return d / "out", {victim_dir / f"created-{counter[0]}": None}, frozenset({0, 2})  # type: ignore[dict-item]
        if kind == "missing-dir":
            return d / "no" / "such" / "out", {}, frozenset({2})
        if kind == "directory":
            (d / "out").mkdir()
            return d / "out", {}, frozenset({2})
        if kind == "fifo":
            os.mkfifo(d / "out")
            return d / "out", {}, frozenset({0, 2})
        if kind == "read-only-file":
            (d / "out").write_text("old")
            (d / "out").chmod(0o444)
            d.chmod(0o777)
            return d / "out", {}, frozenset({0, 2})
        if kind == "read-only-dir":
            d.chmod(0o555)
            return d / "out", {}, frozenset({2})
        raise ValueError(kind)

    kinds = [
        "symlink",
        "dangling-symlink",
        "missing-dir",
        "directory",
        "fifo",
        "read-only-file",
        "read-only-dir",
    ]
    if cfg.quick:
        kinds = ["symlink", "fifo"]
    run = root / "run"
    shutil.copytree(base, run, symlinks=True)
    _open_to_nobody(run)
    root.chmod(0o755)
    plan = ["plan", "--model", "llama-7b", "--gpus", "8", "--gpu", "a100-80gb"]
    for kind in kinds:
        nobody = kind.startswith("read-only")
        for what, argv in (
            ("report --format text --output", ["report", str(run), "--format", "text", "--output"]),
            ("report --format json --output", ["report", str(run), "--format", "json", "--output"]),
            ("report --format html --output", ["report", str(run), "--format", "html", "--output"]),
            ("compare --output", ["compare", str(run), str(run), "--output"]),
            ("plan --output", [*plan, "--output"]),
            ("report --export tensorboard=DIR", None),
        ):
            if cfg.quick and not what.startswith(("report --format html", "plan")):
                continue
            out, victims, codes = dest(kind)
            if argv is None:
                if kind in ("fifo", "read-only-file"):
                    continue
                argv2 = ["report", str(run), "--format", "json", "--export", f"tensorboard={out}"]
                if (
                    kind == "symlink"
                ):  # DIR a symlink to a directory: the user's own path (~/runs -> /scratch)
                    out.unlink()
                    vd = victim_dir / f"vdir-{counter[0]}"
                    vd.mkdir()
                    out.symlink_to(vd)
                    victims = {}
                # DIR is a directory by design: an existing one is written into, a missing one created
                codes = {"directory": frozenset({0}), "missing-dir": frozenset({0, 2})}.get(kind, codes)
                tries.append(Try("outputs", f"{what} ({kind})", argv2, root, codes, victims=victims, as_nobody=nobody))  # fmt: skip
                continue
            tries.append(Try("outputs", f"{what} ({kind})", [*argv, str(out)], root, codes, victims=victims,
                             as_nobody=nobody, timeout=60))  # fmt: skip
    # the default report.html in the run directory, planted
    for kind in ("symlink", "directory", "fifo"):
        r2 = root / f"run-default-{kind}"
        shutil.copytree(base, r2, symlinks=True)
        victims = {}
        if kind == "symlink":
            v = victim()
            (r2 / "report.html").symlink_to(v)
            victims = {v: v.read_bytes()}
        elif kind == "directory":
            (r2 / "report.html").mkdir()
        else:
            os.mkfifo(r2 / "report.html")
        tries.append(Try("outputs", f"report --format html, RUN/report.html is a {kind}", ["report", str(r2), "--format", "html"],
                         root, frozenset({0, 2}) if kind != "symlink" else frozenset({0}), victims=victims, timeout=60))  # fmt: skip
    # the column cache directory planted as a symlink (a big run is cached)
    if not cfg.quick:
        r3 = root / "run-cache-symlink"
        shutil.copytree(cfg.work / "reader" / "big-run-cached", r3, symlinks=True) if (
            cfg.work / "reader" / "big-run-cached"
        ).is_dir() else None
        if r3.is_dir():
            shutil.rmtree(r3 / ".ddp-doctor-cache", ignore_errors=True)
            vd = victim_dir / "cache-victim"
            vd.mkdir()
            (r3 / ".ddp-doctor-cache").symlink_to(vd)
            tries.append(Try("outputs", "report with RUN/.ddp-doctor-cache a symlink to another directory",
                             ["report", str(r3), "--format", "json"], root, frozenset({0}), check=_dir_untouched(vd), timeout=120))  # fmt: skip
    # lint --fix on a symlink: the target (maybe outside the project) must not be rewritten through it
    lf = root / "lintfix"
    lf.mkdir()
    v = victim_dir / "fixable.py"
    v.write_text("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                 "m = DDP(torch.nn.Linear(1, 1), find_unused_parameters=True)\n")  # fmt: skip
    (lf / "train.py").symlink_to(v)
    tries.append(Try("outputs", "lint --fix on a symlinked file", ["lint", "--fix", str(lf / "train.py")], root,
                     victims={v: v.read_bytes()}))  # fmt: skip
    tries.append(Try("outputs", "lint --fix on a directory holding a symlinked file", ["lint", "--fix", str(lf)], root,
                     victims={v: v.read_bytes()}))  # fmt: skip
    # `run --out` into a directory where manifest.json is a planted symlink
    ro = root / "run-out-planted"
    ro.mkdir()
    v = victim()
    (ro / "manifest.json").symlink_to(v)
    tries.append(Try("outputs", "run --out DIR with DIR/manifest.json a planted symlink",
                     ["run", "--out", str(ro), "--", sys.executable, "-c", "pass"], root, victims={v: v.read_bytes()}))  # fmt: skip
    if cfg.quick:
        tries = [
            t
            for t in tries
            if "(" in t.name or "is a symlink" in t.name or t.name.startswith("lint --fix on a symlinked")
        ]
    return tries


def _dir_untouched(d: Path) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        got = sorted(p.name for p in d.rglob("*"))
        return [f"output followed a directory symlink: {got[:3]} written into {d}"] if got else []

    return check


# --- escapes: control characters from the run must not reach the terminal ---------------------------------------


def escape_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "escapes"
    root.mkdir(parents=True, exist_ok=True)
    tries: list[Try] = []
    run = root / "run"
    shutil.copytree(base, run, symlinks=True)
    p = PAYLOAD

    def inject(rec: dict) -> dict:
        k = rec.get("kind")
        if k == "header":
            return dict(rec, host="node" + p)
        if k == "config" and rec.get("what") == "ddp":
            return dict(rec, module="Model" + p, batchnorm=["bn" + p])
        if k == "config" and rec.get("what") == "optimizer":
            return dict(rec, type="AdamW" + p)
        if k == "config" and rec.get("what") == "params":
            return dict(rec, names=[n + p for n in rec["names"]])
        if k == "unused":
            return dict(rec, names=["lm_head" + p])
        if k == "update":
            return dict(rec, tensors=[dict(t, name=t["name"] + p) for t in rec["tensors"]])
        return rec

    edit(run, inject)
    with open(rank_path(run, 1), "a") as fh:
        fh.write(json.dumps({"kind": "probe_error", "instrument": "x" + p, "step": 1, "error": "RuntimeError: " + p,
                             "traceback": p}) + "\n")  # fmt: skip
        fh.write(json.dumps({"kind": "logged_loss", "step": 1, "micro": 0, "source": "stdout", "key": "loss" + p,
                             "value": 1.0, "resolution": 0.01, "rank": 1}) + "\n")  # fmt: skip
        fh.write('{"kind": "step", "step": "' + p + '"}\n')  # a corrupt line quoted in a problem
    edit_manifest(
        run, lambda m: dict(m, command=["python", "train.py", "--name=" + p], cwd="/home/" + p, host="h" + p)
    )
    named = root / ("run" + p)
    shutil.copytree(base, named, symlinks=True)
    (named / "manifest.json").write_text("{")  # a problem that names the path
    missing = root / ("missing" + p)
    for fmt in ("text", "json"):
        for on_pty in (False, True):
            tag = "pty" if on_pty else "pipe"
            tries.append(Try("escapes", f"injected strings in every record, report [{fmt}, {tag}]",
                             ["report", str(run), "--format", fmt], root, frozenset({0}), on_pty=on_pty))  # fmt: skip
            tries.append(Try("escapes", f"run dir named with ESC/OSC/BEL, report [{fmt}, {tag}]",
                             ["report", str(named), "--format", fmt], root, frozenset({0}), on_pty=on_pty))  # fmt: skip
    for on_pty in (False, True):
        tag = "pty" if on_pty else "pipe"
        tries += [
            Try("escapes", f"report of a missing path with ESC [{tag}]", ["report", str(missing)], root, frozenset({2}), on_pty=on_pty),
            Try("escapes", f"compare with an injected side [{tag}]", ["compare", str(base), str(run)], root, frozenset({0}), on_pty=on_pty),
            Try("escapes", f"plan --model path with ESC [{tag}]", ["plan", "--model", str(missing), "--gpus", "1"], root, frozenset({2}), on_pty=on_pty),
            Try("escapes", f"report --output path with ESC [{tag}]", ["report", str(run), "--format", "json", "--output", str(root / ("o" + p))],
                root, frozenset({0, 2}), on_pty=on_pty),
        ]  # fmt: skip
    src = root / "src"
    src.mkdir()
    (src / ("train" + p + ".py")).write_text(DDP_SCRIPT)
    (src / "names.py").write_text(DDP_SCRIPT.replace("torch.nn.Linear(10, 10)", f"Net{p!r}"[:0] + "Net()")
                                  .replace("def main():", f"class Net(torch.nn.Module):\n    name = {p!r}\n\n\ndef main():"))  # fmt: skip
    for fmt in ("text", "json", "sarif"):
        for on_pty in (False, True):
            tag = "pty" if on_pty else "pipe"
            tries.append(Try("escapes", f"lint a file named with ESC [{fmt}, {tag}]", ["lint", str(src), "--format", fmt], root,
                             on_pty=on_pty))  # fmt: skip
    out = root / "run-argv"
    tries.append(Try("escapes", "run with ESC in --out and in the command's argv [pty]",
                     ["run", "--out", str(out) + p, "--", sys.executable, "-c", "pass", "--name=" + p], root, on_pty=True))  # fmt: skip
    if cfg.quick:
        tries = [t for t in tries if "pty" in t.name and ("injected strings" in t.name or "lint" in t.name)][
            ::2
        ]
    return tries


# --- concurrency ---------------------------------------------------------------------------------------------------


def _concurrent_runs(t: Try, cfg: Config) -> list[str]:
    """Two `ddp-doctor run` into one --out, started together: one runs, the other is refused (exit 2)."""
    out = t.cwd / f"together-{t.name.split()[0]}"
    cmd = t.argv
    results: list[Outcome] = [None, None]  # type: ignore[list-item]

    def go(i: int) -> None:
        results[i] = execute(["run", "--out", str(out), "--", *cmd], t.cwd, cfg, timeout=300)

    threads = [threading.Thread(target=go, args=(i,)) for i in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    fails = []
    codes = sorted(o.code for o in results if o.code is not None)
    for o in results:
        fails += [f for f in judge(Try("concurrency", "", [], t.cwd, controls_ok=True), o, cfg)]
    if codes != [0, 2]:
        fails.append(f"silently wrong: exit codes {codes}, expected one run (0) and one refusal (2)")
    expect = t.runner_expect_steps  # type: ignore[attr-defined]
    if expect is None:  # a script without torch writes no rank file: the manifest must be one run's
        try:
            man = json.loads((out / "manifest.json").read_bytes())
            if man.get("command") != cmd:
                fails.append("silently wrong: the manifest is not the command's")
        except (OSError, ValueError) as exc:
            fails.append(f"manifest unreadable after two runs into one --out: {exc}")
        return fails
    rep = execute(["report", str(out), "--format", "json"], t.cwd, cfg)
    fails += judge(Try("concurrency", "", [], t.cwd, frozenset({0})), rep, cfg)
    if rep.code == 0:
        got = json.loads(rep.stdout)["run"]["optimizer_steps"]
        if got != expect:
            fails.append(
                f"silently wrong: {got} optimizer steps after two runs into one --out, expected {expect}"
            )
    return fails


def _concurrent_reports(t: Try, cfg: Config) -> list[str]:
    """Four `report`s of one run at the same time (each may write the cache): all succeed, same answer."""
    outs: list[Outcome] = [None] * 4  # type: ignore[list-item]

    def go(i: int) -> None:
        outs[i] = execute(t.argv, t.cwd, cfg, timeout=180)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    fails = [f for o in outs for f in judge(Try("concurrency", "", [], t.cwd, frozenset({0})), o, cfg)]
    steps = {json.loads(o.stdout)["run"]["optimizer_steps"] for o in outs if o.code == 0}
    if len(steps) > 1:
        fails.append(f"silently wrong: concurrent reports disagree on optimizer_steps: {sorted(steps)}")
    return fails


def concurrency_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "concurrency"
    root.mkdir(parents=True, exist_ok=True)
    sleep = [sys.executable, "-c", "import time; time.sleep(3)"]
    tries = []
    for i in range(1 if cfg.quick else 5):
        t = Try(
            "concurrency",
            f"s{i} two runs of a sleeping script into one --out",
            sleep,
            root,
            runner=_concurrent_runs,
        )
        t.runner_expect_steps = None  # type: ignore[attr-defined]
        tries.append(t)
    if not cfg.quick:
        trainer = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "ddp_doctor.trainer",
                   "--preset", "tiny", "--steps", "4", "--no-progress"]  # fmt: skip
        t = Try(
            "concurrency", "t0 two 2-rank trainer runs into one --out", trainer, root, runner=_concurrent_runs
        )
        t.runner_expect_steps = 4  # type: ignore[attr-defined]
        tries.append(t)
        big = cfg.work / "reader" / "big-run-cached"
        if big.is_dir():
            r = root / "big"
            shutil.copytree(big, r, symlinks=True)
            shutil.rmtree(r / ".ddp-doctor-cache", ignore_errors=True)
            tries.append(Try("concurrency", "four reports of one big run at once (cache writes race)",
                             ["report", str(r), "--format", "json"], root, runner=_concurrent_reports))  # fmt: skip
    r = root / "small"
    shutil.copytree(base, r, symlinks=True)
    tries.append(Try("concurrency", "four reports of one run at once", ["report", str(r), "--format", "json"], root,
                     runner=_concurrent_reports))  # fmt: skip
    return tries


# --- secrets -----------------------------------------------------------------------------------------------------------


def secret_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "secrets"
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(cfg.seed + 7)

    def s() -> str:
        return "S3CR3T" + "".join(rng.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(12))

    argv_forms = [
        lambda v: ["--api-key", v], lambda v: [f"--hf-token={v}"], lambda v: ["--password", v],
        lambda v: ["--token", v], lambda v: ["--secret", v], lambda v: [f"wandb.api_key={v}"],
        lambda v: [f"+db.password={v}"], lambda v: [f"https://user:{v}@example.com/repo"],
        lambda v: ["--auth", v], lambda v: ["--passphrase", v], lambda v: [f"--aws-secret-access-key={v}"],
        lambda v: [f"--apiKey={v}"], lambda v: ["--db-pass", v],
    ]  # fmt: skip
    env_names = ["NCCL_PWD", "TORCH_CREDS", "ACCELERATE_API_TOK", "HF_TOKEN", "WANDB_API_KEY", "NCCL_SECRET",
                 "TORCH_AUTH_HEADER", "MASTER_PASSWORD", "OMP_API_KEY"]  # fmt: skip
    tries = []
    for variant in range(1 if cfg.quick else 3):
        secrets: list[str] = []
        args: list[str] = []
        for form in argv_forms:
            v = s()
            secrets.append(v)
            args += form(v)
        tokens = ["hf_" + "A" * 34, "sk-" + "b" * 40, "ghp_" + "c" * 36, "AKIA" + "D" * 16]
        args += tokens
        secrets += tokens
        env = {}
        for n in env_names:
            env[n] = s()
            secrets.append(env[n])
        env["NCCL_SOCKET_IFNAME"] = "eth0"
        out = root / f"run-{variant}"
        if variant < 2:
            cmd = [sys.executable, "-c", "import sys; sys.exit(0)", *args]
        else:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "ddp_doctor.trainer",
                   "--preset", "tiny", "--steps", "2", "--no-progress"]  # fmt: skip
            env.update({"WANDB_API_KEY": env["WANDB_API_KEY"]})
        t = Try("secrets", f"v{variant}: {len(secrets)} secrets in argv/env of `run`", ["run", "--out", str(out), "--", *cmd],
                root, env=env, secrets=tuple(secrets), scan=(out,), controls_ok=True, timeout=300, check=_perms(out))  # fmt: skip
        tries.append(t)
        for fmt in ("json",) if cfg.quick else ("json", "html", "text"):
            o = root / f"report-{variant}.{fmt}"
            codes = (
                frozenset({0}) if variant == 2 else frozenset({0, 2})
            )  # no torch, no rank file: "not a run"
            tries.append(Try("secrets", f"v{variant}: report [{fmt}] of that run", ["report", str(out), "--format", fmt, "--output", str(o)],
                             root, codes, secrets=tuple(secrets), scan=(o, out)))  # fmt: skip
    return tries


def _perms(out: Path) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        bad = []
        for p in [out, *out.rglob("*")]:
            if p.is_symlink():
                continue
            mode = p.stat().st_mode & 0o777
            if mode & 0o077:
                bad.append(f"{p.relative_to(out.parent)} {mode:o}")
        return [f"run directory readable by others: {bad[:3]}"] if bad else []

    return check


# --- paths under a folder the user may not enter (stat itself fails with EACCES) -------------------------


def locked_tries(base: Path, cfg: Config) -> list[Try]:
    """Run as an unprivileged user: every command given a path inside a 0700 folder of another user."""
    root = cfg.work / "locked"
    open_run = root / "open-run"
    shutil.copytree(base, open_run, symlinks=True)
    _open_to_nobody(open_run)
    locked = root / "locked"
    shutil.copytree(base, locked / "run", symlinks=True)
    (locked / "config.json").write_text(json.dumps({"hidden_size": 512, "num_hidden_layers": 2}))
    (locked / "train.py").write_text(DDP_SCRIPT)
    locked.chmod(0)  # not even its owner may enter (the harness may run as that owner)
    root.chmod(0o755)
    cases = {
        "reader": ["report", str(locked / "run"), "--format", "json"],
        "compare": ["compare", str(open_run), str(locked / "run")],
        "plan": ["plan", "--model", str(locked / "config.json"), "--gpus", "1"],
        "lint": ["lint", str(locked / "train.py")],
        "outputs": ["report", str(open_run), "--format", "json", "--output", str(locked / "out.json")],
    }
    return [
        Try(
            area,
            f"{argv[0]}: a path inside a folder we may not enter (as nobody)",
            argv,
            root,
            frozenset({2}),
            as_nobody=True,
        )  # fmt: skip
        for area, argv in cases.items()
    ]


# --- the matrix ----------------------------------------------------------------------------------------------------------


def build(cfg: Config, areas: tuple[str, ...]) -> list[Try]:
    base = make_real_run(cfg.work / "base", world=2, steps=12)
    tries: list[Try] = []
    if "reader" in areas:
        tries += reader_tries(base, cfg) + import_tries(cfg)
        if not cfg.quick:
            full = make_real_run(cfg.work / "base-full", world=2, steps=12, level="full")
            single = make_real_run(cfg.work / "base-single", world=1, steps=12)
            for b in (full, single):
                sub = Config(
                    **{
                        **cfg.__dict__,
                        "work": cfg.work / f"{b.name}-tries",
                        "quick": True,
                        "seed": cfg.seed + len(b.name),
                    }
                )
                sub.work.mkdir(exist_ok=True)
                more = reader_tries(b, sub)
                for t in more:
                    t.name = f"{b.name}: {t.name}"
                tries += more
        if not cfg.quick:
            live = cfg.work / "live"
            live.mkdir()
            tries.append(Try("reader", "a real run polled from start to end", [], live, runner=_live_polls))
            tries.append(
                Try("reader", "a real run with rank 1 SIGKILLed mid-run", [], live, runner=_sigkilled_rank)
            )
    if "compare" in areas:
        if "reader" not in areas:
            reader_tries(base, cfg)
        tries += compare_tries(base, cfg)
    if "lint" in areas:
        tries += lint_tries(cfg)
    if "plan" in areas:
        tries += plan_tries(cfg)
    if "outputs" in areas:
        tries += output_tries(base, cfg)
    if "escapes" in areas:
        tries += escape_tries(base, cfg)
    if "concurrency" in areas:
        tries += concurrency_tries(base, cfg)
    if "secrets" in areas:
        tries += secret_tries(cfg)
    if os.geteuid() != 0 or shutil.which("setpriv"):  # file modes must be enforced to try these
        tries += [t for t in locked_tries(base, cfg) if t.area in areas]
    return tries


def run_matrix(
    cfg: Config, areas: tuple[str, ...] = AREAS, log: Path | None = None, only: tuple[str, ...] = ()
) -> list[dict[str, object]]:
    cfg.work.mkdir(parents=True, exist_ok=True)
    cfg.work.chmod(0o755)
    tries = build(cfg, areas)
    if only:
        tries = [t for t in tries if any(o in t.name for o in only)]
    # runs (and the reports of what they wrote) one after the other, after the read-only tries
    sequential = [t for t in tries if t.runner is not None or t.argv[:1] == ["run"] or t.area == "secrets"]
    parallel = [t for t in tries if t not in sequential]
    results: list[dict[str, object]] = []
    with open(log or os.devnull, "w") as fh:

        def record(res: dict[str, object]) -> None:
            results.append(res)
            fh.write(json.dumps(res) + "\n")
            fh.flush()

        with concurrent.futures.ThreadPoolExecutor(cfg.jobs) as pool:
            for res in pool.map(lambda t: run_try(t, cfg), parallel):
                record(res)
        for t in sequential:
            record(run_try(t, cfg))
    return results


def table(results: list[dict[str, object]]) -> str:
    rows = ["| area | tries | failures |", "|---|---:|---:|"]
    total = [0, 0]
    for area in AREAS:
        rs = [r for r in results if r["area"] == area]
        if not rs:
            continue
        bad = sum(1 for r in rs if r["failures"])
        rows.append(f"| {area} | {len(rs)} | {bad} |")
        total[0] += len(rs)
        total[1] += bad
    rows.append(f"| **all** | **{total[0]}** | **{total[1]}** |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the CI-sized subset")
    ap.add_argument("--out", type=Path, default=None, help="work directory (default: a new temporary one)")
    ap.add_argument("--areas", default=",".join(AREAS), help=f"comma-separated subset of {','.join(AREAS)}")
    ap.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per command before it counts as a hang"
    )
    ap.add_argument("--rss-mb", type=float, default=1500.0, help="peak RSS above this is a memory failure")
    ap.add_argument("--as-mb", type=float, default=6144.0, help="RLIMIT_AS of every command")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument(
        "--only", action="append", default=[], help="only tries whose name contains this (repeatable)"
    )
    args = ap.parse_args(argv)
    areas = tuple(a for a in args.areas.split(",") if a)
    unknown = set(areas) - set(AREAS)
    if unknown:
        ap.error(f"unknown areas {sorted(unknown)}")
    work = args.out or Path(tempfile.mkdtemp(prefix="hostile-matrix-"))
    if args.out and work.exists() and any(work.iterdir()):
        ap.error(f"--out {work} is not empty")
    cfg = Config(args.quick, work, args.timeout, args.rss_mb, args.as_mb, args.jobs, args.seed)
    t0 = time.monotonic()
    results = run_matrix(cfg, areas, work / "tries.jsonl", tuple(args.only))
    print(table(results))
    for r in results:
        if r["failures"]:
            print(f"FAIL [{r['area']}] {r['name']}: {'; '.join(r['failures'])}")  # type: ignore[arg-type]
    print(f"{len(results)} tries in {time.monotonic() - t0:.0f} s; every try: {work / 'tries.jsonl'}")
    (work / "summary.md").write_text(table(results) + "\n")
    if not args.keep and args.out is None:
        _rmtree(work)
    return 1 if any(r["failures"] for r in results) else 0


def _rmtree(p: Path) -> None:
    for q in [p, *p.rglob("*")]:
        if q.is_dir() and not q.is_symlink():
            with contextlib.suppress(OSError):
                q.chmod(0o755)
    shutil.rmtree(p, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
