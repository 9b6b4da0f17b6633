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
from tests.rundir.window_lines import random_window, step_starts

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
        info = rolled.run_info["rollups"]
        # where the report must read more by design: a sampled statistic near its threshold (the
        # wider sample, with its note) or skipped steps in most windows (every one is read raw)
        wider = any("within 10% of the threshold" in n for n in info["notes"])
        skipped = info["reasons"].get("skipped", 0) * every >= steps / 2
        if not (wider or skipped):
            shares.append(view.raw_steps / steps)
        diff = _differences(raw, rolled)
        if diff:
            bad[fault] = diff
    return {"bad": bad, "raw_share": sum(shares) / max(len(shares), 1), "runs_judged": len(shares)}


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
    # at world size 1 the synthetic writer's noise-band ratio sits at its threshold (1.52 vs 1.5),
    # so most runs read the wider sample by design: the bound is on the runs that did not
    assert got["runs_judged"] >= 1
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


def _series_run(kind: str, world: int, steps: int, run: Path) -> Path:
    """A run of ``world`` ranks whose loss is a zero, constant or NaN-dotted series (SGD)."""
    per_rank = {
        r: [sgd()]
        + [
            step(
                t,
                [_series(kind, t), _series(kind, t + 1)],
                grad_sq=(0.0, 0.0) if kind == "zero" else (1.0, 0.5),
            )
            for t in range(steps)
        ]
        for r in range(world)
    }
    return _write_records(run, per_rank, world)


@pytest.mark.parametrize("kind", ["zero", "constant", "nan"])
@pytest.mark.parametrize("world", [1, 2])
def test_zero_constant_and_nan_series_give_the_same_verdicts(kind: str, world: int, tmp_path: Path) -> None:
    run = _indexed(_series_run(kind, world, 500, tmp_path / "run"), 10)
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


# --- windows read in part (R larger than what a sample block or a spike's history needs) ----------

# R = 60: a sample block (50 steps) is the first 50 step records of one window, a spike's history
# (50 + 5 steps) the last 55 of the window before it
PART_EVERY = 60
PART_FAULTS = ("clean", "loss-spike", "grad-spike", "rank-skew", "oscillation")


def _whole(run: Path, monkeypatch: pytest.MonkeyPatch) -> Diagnosis:
    """The rollup path with every selected window read whole (the read before windows in part)."""
    from ddp_doctor.rundir import rollup_read

    with monkeypatch.context() as m:
        m.setattr(rollup_read, "READ_IN_PART", False)
        diag = diagnose_run(read_run(run, rollups="on"))
    assert diag.context.run.rollups is not None and not diag.context.run.rollups.parts
    return diag


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_windows_read_in_part_give_the_same_verdicts(
    world: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The raw path's verdicts and statuses wherever the same windows read whole give them: no new
    difference (at R = 60 the selection misses a spike at world size 3 that R = 25 catches, and on
    a clean 4-rank run the whole windows' sample is a false rank skew at t = 3.8 that the part
    reads, like the raw path, rule out: those are the sample's and the selection's, not the part
    reads')."""
    from ddp_doctor.rundir import rollup_read

    for fault in PART_FAULTS:
        if world == 1 and fault in NEEDS_TWO:
            continue
        spec = SynthSpec(world_size=world, steps=1200, faults=() if fault == "clean" else (fault,))
        run = _indexed(write_run(tmp_path / f"{fault}-{world}", spec), PART_EVERY)
        raw, rolled = _both(run)
        assert set(_differences(raw, rolled)) <= set(_differences(raw, _whole(run, monkeypatch))), fault
        # the first read (a statistic near its threshold makes diagnose_run read every window again)
        first = read_run(run, rollups="on")
        view = first.rollups
        assert view is not None and view.parts, fault
        # a sample block's 50 steps; a history's 55 at most (less where it ends at a spike's marks)
        for win, p in view.parts.items():
            why = view.selected[win]
            assert 0 < p.k < PART_EVERY and p.mode in ("head", "tail", "span"), (win, p)
            assert p.mode != "tail" or p.k <= 55 or "spike" in why, (win, p, why)
            assert p.mode != "span" or "spike" in why, (win, p, why)
        # every rank holds exactly the step records the index and the parts say
        for rank, data in first.ranks.items():
            c = data.steps
            assert c is not None
            w = c.step // PART_EVERY
            for win in view.selected:
                p = view.parts.get(win, rollup_read.Part("head", PART_EVERY))
                a = {"head": 0, "tail": PART_EVERY - p.k, "span": p.skip}[p.mode]
                want = np.arange(win * PART_EVERY + a, win * PART_EVERY + a + p.k)
                assert np.array_equal(c.step[w == win], want), (fault, rank, win, p)
        js = view.to_json()["windows_read_in_part"]
        assert js == {m: sum(p.mode == m for p in view.parts.values()) for m in ("head", "tail", "span")}
        # the sample is the same 50 steps of each block whether a window was read in part or whole
        heads = rollup_read.sample_heads(view.windows, PART_EVERY, view.sample)
        assert heads and view.sample_heads == heads
        s = np.arange(view.windows * PART_EVERY)
        sampled = s[view.sampled(s)]
        assert all((sampled[sampled // PART_EVERY == b] % PART_EVERY < 50).all() for b in heads)


@pytest.mark.parametrize("kind", ["zero", "constant", "nan"])
@pytest.mark.parametrize("world", [1, 3])
def test_zero_constant_and_nan_series_read_in_part(kind: str, world: int, tmp_path: Path) -> None:
    """Zero, constant and NaN series with windows read in part: the raw path's verdicts."""
    run = _indexed(_series_run(kind, world, 1200, tmp_path / "run"), PART_EVERY)
    raw, rolled = _both(run)
    assert _differences(raw, rolled) == []
    view = read_run(run, rollups="on").rollups  # the read's own view, before any wider re-read
    assert view is not None
    if kind == "nan":  # a window with a NaN is read whole
        nan_windows = {t // PART_EVERY for t in range(1200) if t % 97 == 13}
        assert all("nonfinite" in view.selected[w] for w in nan_windows) and not nan_windows & set(view.parts)
    else:
        assert any(p.mode == "head" for p in view.parts.values())


def _window_lines(run: Path, rank: int, win: int) -> tuple[bytes, list[tuple[int, int]]]:
    """A rank file's bytes and the (start, end) of the step lines of window ``win`` (R = PART_EVERY)."""
    data = records.rank_file(run, rank).read_bytes()
    out, at = [], 0
    for line in data.splitlines(keepends=True):
        if line.startswith(b'{"kind":"step","step":'):
            s = int(line[len(b'{"kind":"step","step":') :].split(b",", 1)[0])
            if s // PART_EVERY == win:
                out.append((at, at + len(line)))
        at += len(line)
    return data, out


@pytest.mark.parametrize("mode", ["head", "tail"])
def test_a_damaged_window_read_in_part_falls_back_with_a_note(mode: str, tmp_path: Path) -> None:
    """A window read in part whose bytes hold fewer step lines than its index says (step lines made
    another kind, the same size: the offsets still match): that rank is read whole and cut to the
    same steps, with a note; never a traceback."""
    spec = SynthSpec(world_size=2, steps=1200, faults=("loss-spike",))
    run = _indexed(write_run(tmp_path / "run", spec), PART_EVERY)
    view = read_run(run, rollups="on").rollups
    assert view is not None
    win = next(w for w, p in view.parts.items() if p.mode == mode)
    data, lines = _window_lines(run, 1, win)
    damaged = bytearray(data)
    for a, _ in lines[:-1] if mode == "head" else lines[1:]:  # all but one: too few for any cut
        damaged[a : a + 15] = b'{"kind":"stex",'
    records.rank_file(run, 1).write_bytes(bytes(damaged))
    os.utime(records.rank_file(run, 1))
    rolled = diagnose_run(read_run(run, rollups="on"))
    notes = _notes(rolled)
    assert "rank 1: " in notes and "fewer step lines" in notes and "read whole" in notes, notes
    c = rolled.context.run.ranks[1].steps
    assert c is not None and len(c.step[c.step // PART_EVERY == win]) == 1  # the one step line left
    assert rolled.context.run.rollups is not None


def test_a_partial_window_that_the_file_ends_inside_is_noted(tmp_path: Path) -> None:
    """A rank file cut short inside a window read in part (the index says more): a note, no crash."""
    spec = SynthSpec(world_size=2, steps=1200)
    run = _indexed(write_run(tmp_path / "run", spec), PART_EVERY)
    view = read_run(run, rollups="on").rollups
    assert view is not None
    win = min(w for w, p in view.parts.items() if p.mode == "head")
    data, lines = _window_lines(run, 0, win)
    with open(records.rank_file(run, 0), "r+b") as fh:  # same inode: the index still claims it
        fh.truncate(lines[10][0] + 7)
    rolled = diagnose_run(read_run(run, rollups="on"))
    assert "rank 0: " in _notes(rolled), _notes(rolled)
    assert rolled.context.run.rollups is not None


def test_nth_step_start_equals_a_split_into_lines() -> None:
    """rollup_read._nth_step_start (bytes.split with a bound) against a plain split, on random
    chunks that begin mid-line or not, with other records, blank lines and look-alike prefixes."""
    import random

    from ddp_doctor.rundir import rollup_read

    rng = random.Random(1)
    kinds = [b'{"kind":"step","step":1}\n', b'{"kind":"other"}\n', b"\n", b'{"kin\n', b'x{"kind":"step",\n']
    for _ in range(2000):
        chunk = b"".join(rng.choice(kinds) for _ in range(rng.randint(0, 12)))
        if chunk and rng.random() < 0.3:
            chunk = chunk[rng.randint(0, len(chunk) - 1) :]
        for at_line_start in (True, False):
            starts = step_starts(chunk, at_line_start)
            for k in range(14):
                want = starts[k] if k < len(starts) else None
                assert rollup_read._nth_step_start(chunk, at_line_start, k, from_end=False) == want
                if k:
                    want = starts[-k] if k <= len(starts) else None
                    assert rollup_read._nth_step_start(chunk, at_line_start, k, from_end=True) == want


def test_cut_finds_the_first_and_last_step_lines(tmp_path: Path) -> None:
    """rollup_read._cut against a plain split of the lines, for lines of random lengths with other
    records between them, whatever the first guess of the bytes needed."""
    from ddp_doctor.rundir import rollup_read

    data = random_window(0)
    path = tmp_path / "f"
    path.write_bytes(b"HEAD\n" + data)
    a, b = 5, 5 + len(data)
    starts = [a + i for i in step_starts(data)]
    assert len(starts) == 100
    fd = os.open(path, os.O_RDONLY)
    try:
        for k in (1, 7, 50, 99):
            for n in (100, 1000, 3):  # the index's count only sizes the first guess
                assert rollup_read._cut(fd, a, b, n, "head", k) == (a, starts[k])
                assert rollup_read._cut(fd, a, b, n, "tail", k) == (starts[100 - k], b)
        assert rollup_read._cut(fd, a, b, 100, "head", 100) is None  # no 101st step line
        assert rollup_read._cut(fd, a, b, 100, "tail", 101) is None
    finally:
        os.close(fd)
