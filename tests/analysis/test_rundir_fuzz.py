"""Property-based fuzzing of the reader and the report (issue 10, item 5).

A real run directory (written by the fixture writer through ddp_doctor.rundir.records) is damaged by a
random sequence of operations — truncate, flip bytes, change a field's type, duplicate lines,
delete a file, nest a value deeply, put in huge numbers, swap a file for a FIFO or a symlink loop —
and then read and reported in text, JSON and HTML. The properties: no exception leaves the reader or
the report (only RunDirError when no run is left at all), it finishes (an alarm turns a hang into
a failure), and damage the reader can know about is listed in `run.problems`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from fixtures.synth_run import SynthSpec, write_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.report.html import render_html
from ddp_doctor.report.text import render_text
from ddp_doctor.report.to_json import render_json
from ddp_doctor.rundir import records
from ddp_doctor.rundir.reader import RunDirError, read_run

FILES = ("manifest", "rank0", "rank1")
HOSTILE_VALUES = (
    "abc",
    [1, 2],
    {"a": 1},
    None,
    True,
    1e308,
    -(2**63),
    2**62,
    10**30,
    "nan",
    "-inf",
    "",
)
KNOWN = ("delete", "nest", "duplicate")  # damage the reader must always name


def _path(run: Path, which: str) -> Path:
    return records.manifest_path(run) if which == "manifest" else records.rank_file(run, int(which[-1]))


def _lines(p: Path) -> list[bytes]:
    return p.read_bytes().split(b"\n") if p.is_file() and not p.is_symlink() else []


def apply(run: Path, op: tuple) -> None:
    kind, which, a, b, value = op
    p = _path(run, which)
    if not p.is_file() or p.is_symlink():
        return
    data = p.read_bytes()
    if kind == "truncate":
        p.write_bytes(data[: int(len(data) * a)])
    elif kind == "flip":
        pos = int(len(data) * a) % max(1, len(data))
        buf = bytearray(data)
        for i in range(pos, min(len(buf), pos + 1 + b % 8)):
            buf[i] ^= 1 << (b % 8)
        p.write_bytes(bytes(buf))
    elif kind in ("retype", "huge"):
        lines = _lines(p)
        i = int(len(lines) * a) % max(1, len(lines))
        try:
            rec = json.loads(lines[i]) if which != "manifest" else json.loads(data)
        except ValueError:
            return
        if not isinstance(rec, dict) or not rec:
            return
        key = sorted(rec)[b % len(rec)]
        rec[key] = value if kind == "retype" else [10**30, 2**62, 1e308][b % 3]
        if which == "manifest":
            p.write_text(json.dumps(rec))
        else:
            lines[i] = json.dumps(rec).encode()
            p.write_bytes(b"\n".join(lines))
    elif kind == "duplicate":
        lines = [ln for ln in _lines(p) if ln.strip()]
        if which == "manifest" or not lines:
            return
        p.write_bytes(data + b"\n".join(lines) + b"\n")
    elif kind == "delete":
        if which != "manifest":
            p.unlink()
    elif kind == "nest":
        depth = 2000 + b * 500
        line = b'{"kind":"step","step":1,"losses":' + b"[" * depth + b"]" * depth + b"}\n"
        if which != "manifest":
            p.write_bytes(data + line)
    elif kind == "fifo":
        p.unlink()
        os.mkfifo(p)
    elif kind == "symlink-loop":
        p.unlink()
        os.symlink(p.name, p)


ops = st.tuples(
    st.sampled_from(
        ["truncate", "flip", "retype", "huge", "duplicate", "delete", "nest", "fifo", "symlink-loop"]
    ),
    st.sampled_from(FILES),
    st.floats(0, 1),
    st.integers(0, 50),
    st.sampled_from(HOSTILE_VALUES),
)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return write_run(
        tmp_path_factory.mktemp("fuzz") / "base", SynthSpec(world_size=2, steps=30, every=10, level="full")
    )


def _alarm(signum, frame):
    raise TimeoutError("reader or report hung")


@settings(
    max_examples=int(os.environ.get("DDP_DOCTOR_FUZZ_EXAMPLES", "40")),  # CI: 40; soak: more
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(damage=st.lists(ops, min_size=1, max_size=4))
def test_damaged_run_directories_give_reports_with_problems(base, tmp_path, damage):
    run = tmp_path / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(base, run)
    for op in damage:
        apply(run, op)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        try:
            data = read_run(run)
        except RunDirError:
            return  # nothing of a run left: the documented input error (exit 2)
        diag = diagnose_run(data)
        render_text(diag)
        render_html(diag)
        out = json.loads(render_json(diag))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert out["run"]["problems"] == data.problems
    if any(op[0] in KNOWN and op[1] != "manifest" for op in damage):
        assert data.problems, damage
