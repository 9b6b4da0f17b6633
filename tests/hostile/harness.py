"""The hostile matrix's harness: a try, how it runs (subprocess, limits, pty), how it is judged,
the oracles and the input helpers (real runs of the reference trainer, record edits)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
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


def pick(items: list, quick: bool, every: int) -> list:
    """Every `every`-th item in --quick, all otherwise."""
    return items[::every] if quick else items


def _open_to_nobody(run: Path, keep: tuple[Path, ...] = ()) -> None:
    for p in [run.parent, run, *run.rglob("*")]:
        if p.is_symlink() or p in keep:
            continue
        p.chmod(0o777 if p.is_dir() else 0o644)


def _rmtree(p: Path) -> None:
    for q in [p, *p.rglob("*")]:
        if q.is_dir() and not q.is_symlink():
            with contextlib.suppress(OSError):
                q.chmod(0o755)
    shutil.rmtree(p, ignore_errors=True)
