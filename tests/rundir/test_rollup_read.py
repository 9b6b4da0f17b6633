"""The report's rollup path (rundir/rollup_read.py, analysis/bulk.py) against the full raw read.

Verdict equality over the synthetic suite (tests/fixtures/synth_run.py: every fault and a clean run,
world sizes 1-4; zero, constant and NaN series), each run indexed with `summarize` at a small R so
that most windows are read from their rollups; and the fallbacks: a missing, damaged, truncated or
stale index, a rank file changed under its index, a run still in progress. Every case must give a
report with a note, never a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fixtures.gen_run import header, sgd, step
from fixtures.synth_run import FAULTS, SynthSpec, write_run

from ddp_doctor.analysis.diagnose import Diagnosis, diagnose_run
from ddp_doctor.rundir import records, rollup_index, summarize
from ddp_doctor.rundir.reader import read_run

# faults the synthetic writer cannot make at world size 1 (a skew needs two ranks)
NEEDS_TWO = {"rank-skew"}


def _indexed(run: Path, every: int) -> Path:
    summarize.summarize(run, None, every=every)
    return run


def _both(run: Path) -> tuple[Diagnosis, Diagnosis]:
    return diagnose_run(read_run(run, rollups="off")), diagnose_run(read_run(run, rollups="on"))


def _differences(raw: Diagnosis, rolled: Diagnosis) -> list[tuple[str, str, str]]:
    out = [
        (a.id, a.verdict, b.verdict)
        for a, b in zip(raw.hypotheses, rolled.hypotheses)
        if a.verdict != b.verdict
    ]
    by_id = {f.id: f for f in rolled.findings}
    out += [(f.id, f.status, by_id[f.id].status) for f in raw.findings if f.status != by_id[f.id].status]
    return out


def _suite(world: int, steps: int, every: int, tmp: Path, faults: tuple[str, ...]) -> dict[str, Any]:
    bad, shares = {}, []
    for fault in faults:
        if world == 1 and fault in NEEDS_TWO:
            continue
        run = write_run(
            tmp / f"{fault}-{world}",
            SynthSpec(world_size=world, steps=steps, faults=() if fault == "clean" else (fault,)),
        )
        raw, rolled = _both(_indexed(run, every))
        view = rolled.context.run.rollups
        assert view is not None and rolled.run_info["rollups"]["steps_total"] == steps
        shares.append(view.raw_steps / steps)
        diff = _differences(raw, rolled)
        if diff:
            bad[fault] = diff
    return {"bad": bad, "raw_share": sum(shares) / max(len(shares), 1)}


@pytest.mark.parametrize("world", [2])
def test_verdicts_equal_on_the_synthetic_suite(world: int, tmp_path: Path) -> None:
    got = _suite(world, 600, 10, tmp_path, ("clean", *FAULTS))
    assert got["bad"] == {}
    assert got["raw_share"] < 0.8  # the bulk was read from rollups


@pytest.mark.slow
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_verdicts_equal_on_the_synthetic_suite_long(world: int, tmp_path: Path) -> None:
    got = _suite(world, 2000, 25, tmp_path, ("clean", *FAULTS))
    assert got["bad"] == {}
    assert got["raw_share"] < 0.6


def _write_records(run: Path, per_rank: dict[int, list[dict[str, Any]]], world: int) -> Path:
    (run / records.RANKS_DIR).mkdir(parents=True)
    for rank, recs in per_rank.items():
        lines = [header(rank, world), *recs]
        records.rank_file(run, rank).write_bytes(
            b"".join(records.encode(records.check(dict(r))) for r in lines)
        )
    manifest = {"schema": records.RUN_SCHEMA, "level": "basic", "end": "2026-12-04T00:00:00Z", "exit_code": 0}
    records.manifest_path(run).write_text(json.dumps(manifest))
    return run


def _series(kind: str, t: int) -> float:
    if kind == "zero":
        return 0.0
    if kind == "constant":
        return 2.5
    return float("nan") if t % 97 == 13 else 3.0 - 0.001 * t  # nan: a few non-finite steps


@pytest.mark.parametrize("kind", ["zero", "constant", "nan"])
@pytest.mark.parametrize("world", [1, 2])
def test_zero_constant_and_nan_series_give_the_same_verdicts(kind: str, world: int, tmp_path: Path) -> None:
    per_rank = {
        r: [sgd()]
        + [
            step(
                t,
                [_series(kind, t), _series(kind, t + 1)],
                grad_sq=(0.0, 0.0) if kind == "zero" else (1.0, 0.5),
            )
            for t in range(500)
        ]
        for r in range(world)
    }
    run = _indexed(_write_records(tmp_path / "run", per_rank, world), 10)
    raw, rolled = _both(run)
    assert _differences(raw, rolled) == []
    view = rolled.context.run.rollups
    assert view is not None and view.raw_steps < 500
    if kind == "nan":  # every window with a non-finite loss was read raw
        assert all("nonfinite" in view.selected.get(t // 10, []) for t in range(500) if t % 97 == 13)


@pytest.fixture
def run3(tmp_path: Path) -> Path:
    spec = SynthSpec(world_size=3, steps=600, faults=("loss-spike", "nonfinite"))
    return _indexed(write_run(tmp_path / "run", spec), 10)


def _rolled(run: Path) -> Diagnosis:
    diag = diagnose_run(read_run(run, rollups="on"))
    assert diag.run_info["rollups"] is not None
    return diag


def _notes(diag: Diagnosis) -> str:
    return " | ".join(diag.run_info["problems"])


def test_a_missing_index_is_computed_from_the_rank_file(run3: Path) -> None:
    raw = diagnose_run(read_run(run3, rollups="off"))
    rollup_index.index_path(run3, 1).unlink()
    rolled = _rolled(run3)
    assert "rank(s) (1) without a usable rollup index (no rollup index)" in _notes(rolled)
    assert _differences(raw, rolled) == []


@pytest.mark.parametrize(
    "damage",
    [
        "garbage line",
        "truncated last line",
        "window out of order",
        "bytes beyond the file",
        "other rank",
        "huge window",
        "symlink",
        "fifo",
    ],
)
def test_a_damaged_index_falls_back_with_a_note(run3: Path, damage: str, tmp_path: Path) -> None:
    raw = diagnose_run(read_run(run3, rollups="off"))
    path = rollup_index.index_path(run3, 2)
    lines = path.read_bytes().splitlines(keepends=True)
    if damage == "garbage line":
        lines[5] = b'{"kind":"rollup",broken\n'
    elif damage == "truncated last line":
        lines[-1] = lines[-1][:40]  # killed while appending: the line is ignored, its window read raw
    elif damage == "window out of order":
        lines[3], lines[4] = lines[4], lines[3]
    elif damage == "bytes beyond the file":
        rec = json.loads(lines[-1])
        rec["at"][1] += 10**9
        lines[-1] = records.encode(rec)
    elif damage == "huge window":  # numbers no rank file of this size can hold: never an allocation
        rec = json.loads(lines[-1])
        rec["window"], rec["first"], rec["last"] = 10**9, 10**10, 10**10
        lines[-1] = records.encode(rec)
    elif damage == "other rank":
        lines[0] = lines[0].replace(b'"rank":2', b'"rank":1')
    if damage == "symlink":
        elsewhere = tmp_path / "elsewhere.jsonl"
        elsewhere.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(elsewhere)
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        path.write_bytes(b"".join(lines))
    rolled = _rolled(run3)
    notes = _notes(rolled)
    if damage == "truncated last line":
        assert "rank(s)" not in notes and rolled.context.run.rollups.rank_steps[2] == 600  # type: ignore[union-attr]
    else:
        assert "(2) without a usable rollup index" in notes, notes
    assert _differences(raw, rolled) == []


def test_a_stale_index_of_a_replaced_rank_file_is_not_used(run3: Path) -> None:
    raw = diagnose_run(read_run(run3, rollups="off"))
    path = records.rank_file(run3, 0)
    copy = path.with_suffix(".new")
    copy.write_bytes(path.read_bytes())  # written while the old file exists: another inode
    copy.replace(path)  # the same bytes under a new inode: the index no longer indexes this file
    rolled = _rolled(run3)
    assert "stale (it indexes another rank file: the inode differs)" in _notes(rolled)
    assert _differences(raw, rolled) == []


def test_offsets_that_do_not_match_the_rank_file_read_it_whole(run3: Path) -> None:
    path = records.rank_file(run3, 1)
    data = path.read_bytes()
    with open(path, "r+b") as fh:  # same inode, same size: a rewritten file the index does not describe
        fh.write(data[200:] + data[:200])
    rolled = _rolled(run3)
    assert "rank 1: " in _notes(rolled) and "read whole" in _notes(rolled)
    assert rolled.context.run.rollups is not None


def test_a_run_in_progress_reads_its_tail_raw(tmp_path: Path) -> None:
    spec = SynthSpec(world_size=2, steps=600, ended=False)
    run = write_run(tmp_path / "run", spec)
    for rank in range(2):  # the index of a run at step 450; the rank files go on to 600 and a cut line
        path = records.rank_file(run, rank)
        data = path.read_bytes()
        cut = [
            i
            for i, line in enumerate(data.splitlines(keepends=True))
            if line.startswith(b'{"kind":"step","step":450,')
        ][0]
        kept = b"".join(data.splitlines(keepends=True)[:cut])
        path.write_bytes(kept)
        summarize.summarize(run, (rank, rank), every=10)
        with open(path, "ab") as fh:
            fh.write(data[len(kept) :] + b'{"kind":"step","step":600,"ti')
    raw = diagnose_run(read_run(run, rollups="off"))
    rolled = _rolled(run)
    view = rolled.context.run.rollups
    assert view is not None and view.rank_steps == {0: 600, 1: 600}
    steps = rolled.context.run.ranks[0].steps
    assert steps is not None and set(range(450, 600)) <= set(steps.step.tolist())  # the tail, raw
    assert any("truncated" in p for p in rolled.run_info["problems"])
    assert rolled.run_info["in_progress"] and _differences(raw, rolled) == []


def test_requested_steps_are_read_raw(run3: Path) -> None:
    view = read_run(run3, rollups="on", steps=((305, 318),)).rollups
    assert view is not None and "requested" in view.selected[30] and "requested" in view.selected[31]


def test_auto_keeps_small_runs_on_the_raw_path(run3: Path) -> None:
    assert read_run(run3).rollups is None  # below ROLLUP_MIN_BYTES: every step raw


def test_report_flags(run3: Path) -> None:
    import subprocess
    import sys

    cli = [sys.executable, "-m", "ddp_doctor.cli", "report", str(run3)]
    ok = subprocess.run(
        [*cli, "--rollups", "on", "--steps", "300-325", "--format", "json"], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["run"]["rollups"]["reasons"]["requested"] == 3
    assert subprocess.run([*cli, "--format", "json"], capture_output=True, text=True).returncode == 0
    for bad in (["--rollups", "maybe"], ["--steps", "9-3"], ["--steps", "x"]):
        assert subprocess.run([*cli, *bad], capture_output=True, text=True).returncode == 2, bad


def test_worker_processes_read_the_same(run3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above PARALLEL_MIN_BYTES the passes run in worker processes (one per core): the same windows,
    the same steps, the same notes (a missing index computed in a worker)."""
    from ddp_doctor.rundir import rollup_read

    rollup_index.index_path(run3, 0).unlink()
    serial = read_run(run3, rollups="on")
    monkeypatch.setattr(rollup_read, "PARALLEL_MIN_BYTES", 0)
    parallel = read_run(run3, rollups="on")
    assert serial.rollups is not None and parallel.rollups is not None
    assert serial.rollups.selected == parallel.rollups.selected and serial.problems == parallel.problems
    for rank in serial.ranks:
        a, b = serial.ranks[rank].steps, parallel.ranks[rank].steps
        assert a is not None and b is not None and (a.step == b.step).all()
        assert np.array_equal(a.losses, b.losses, equal_nan=True)
