"""Windows selected for spike marks read as the span around the marks (rundir/rollup_read.py `parts`,
`mark_spans`, `_span_cut`; docs/report.md "Rollups and scale", issue 26).

A window selected only for its spike marks is read from SPIKE_WINDOW + HISTORY_MARGIN steps before
the marks' first step to AFTER_SPIKE steps after their last, over every rank whose marks count; the
window before only where that history reaches into it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.rundir import records, rollup_read, summarize
from ddp_doctor.rundir.reader import read_run
from ddp_doctor.rundir.rollup_index import GRAD_SPIKE, LOSS_SPIKE
from ddp_doctor.rundir.rollup_read import AFTER_SPIKE, HISTORY_MARGIN, Part, RankWindows
from ddp_doctor.rundir.rollups import SPIKE_WINDOW
from tests.rundir.window_lines import random_window, step_starts

REACH = SPIKE_WINDOW + HISTORY_MARGIN  # 55: the history read before the marks' first step


def _rw(rank: int, W: int, R: int, marked: dict[int, tuple[int, int, int, int]]) -> RankWindows:
    """A rank's index arrays: W full windows of a constant loss (no screen fires, the lr flat), with
    spike marks (loss first, last, ‖g‖² first, last; -1: none) in the windows of ``marked``."""
    window = np.arange(W, dtype=np.int64)
    flags = np.zeros(W, dtype=np.int64)
    marks = np.full((W, 4), -1, dtype=np.int64)
    for w, m in marked.items():
        flags[w] |= (LOSS_SPIKE if m[0] >= 0 else 0) | (GRAD_SPIKE if m[2] >= 0 else 0)
        marks[w] = m
    stat = np.tile([float(R), 0.0, 2.0 * R, 4.0 * R, 2.0, 2.0], (W, 1))
    return RankWindows(
        rank=rank,
        every=R,
        window=window,
        first=window * R,
        last=window * R + R - 1,
        steps=np.full(W, R, dtype=np.int64),
        at=np.stack([window * 1000, window * 1000 + 1000], axis=1),
        others=np.zeros((0, 2), dtype=np.int64),
        flags=flags,
        digest=np.zeros(W, dtype=np.uint64),
        loss=stat,
        gsq=stat.copy(),
        gsql=stat.copy(),
        samples=stat.copy(),
        tokens=stat.copy(),
        lr=np.tile([1e-3, 1e-3], (W, 1)),
        marks=marks,
        tail=W * 1000,
        size=W * 1000,
        ino=1,
    )


def _plan(ranks: list[RankWindows]) -> tuple[dict[int, list[str]], dict[int, Part]]:
    red = rollup_read.reduce(ranks)
    selected = rollup_read.select(red)
    return selected, rollup_read.parts(selected, red.every, {}, spans=rollup_read.mark_spans(red))


def _steps(w: int, R: int, p: Part | None) -> tuple[int, int]:
    """The first and last step a window's Part reads."""
    if p is None:
        return w * R, w * R + R - 1
    a = {"head": 0, "tail": R - p.k, "span": p.skip}[p.mode]
    return w * R + a, w * R + a + p.k - 1


# W = 200 windows of 100: the even sample's blocks are windows 0, 28, 57, 85, 114, 142, 171, 199
@pytest.mark.parametrize(
    ("mark", "want", "before"),
    [
        (
            4010,
            (4000, 4010 + AFTER_SPIKE),
            (4010 - REACH, 3999),
        ),  # at the start: history in the window before
        (4050, (4000, 4050 + AFTER_SPIKE), None),  # 50 steps in: the window holds its history
        (4070, (4070 - REACH, 4070 + AFTER_SPIKE), None),  # the middle: a span
        (4095, (4095 - REACH, 4099), None),  # at the end: a tail
    ],
)
def test_a_spike_window_is_read_around_its_marks(
    mark: int, want: tuple[int, int], before: tuple[int, int] | None
) -> None:
    selected, part = _plan([_rw(r, 200, 100, {40: (mark, mark, -1, -1)}) for r in range(2)])
    assert selected[40] == ["spike"]
    assert _steps(40, 100, part.get(40)) == want
    if before is None:
        assert 39 not in selected  # the history lies inside the spike's window
    else:
        assert selected[39] == ["before-spike"] and _steps(39, 100, part.get(39)) == before


def test_the_marks_of_several_ranks_and_series_widen_the_span() -> None:
    """The first mark of any rank (a loss mark that counts, a gradient mark of any rank) to the last."""
    ranks = [
        _rw(0, 200, 100, {40: (4062, 4063, -1, -1)}),
        _rw(1, 200, 100, {40: (4070, 4070, -1, -1)}),
        _rw(2, 200, 100, {40: (-1, -1, 4075, 4075)}),
        _rw(3, 200, 100, {}),
    ]
    selected, part = _plan(ranks)
    assert selected[40] == ["spike"] and 39 not in selected
    assert part[40] == Part("span", 4075 + AFTER_SPIKE - (4062 - REACH) + 1, 4062 - REACH - 4000)
    ranks[3] = _rw(3, 200, 100, {40: (4090, 4090, -1, -1)})  # a later mark of another rank: to the end
    selected, part = _plan(ranks)
    assert part[40] == Part("tail", 4100 - (4062 - REACH))


def test_loss_marks_below_the_quorum_do_not_count() -> None:
    """One rank's loss mark of 12 does not select its window, nor widen a gradient mark's span."""
    ranks = [_rw(r, 200, 100, {}) for r in range(12)]
    ranks[0] = _rw(0, 200, 100, {40: (4020, 4020, -1, -1), 60: (6010, 6010, 6080, 6080)})
    selected, part = _plan(ranks)
    assert 40 not in selected
    assert selected[60] == ["spike"] and _steps(60, 100, part[60]) == (6080 - REACH, 6080 + AFTER_SPIKE)


def test_a_history_across_two_windows() -> None:
    """R = 25: the marks' history reaches back two windows, the farthest read for its last steps."""
    ranks = [_rw(r, 800, 25, {300: (7507, 7508, -1, -1)}) for r in range(2)]
    selected, part = _plan(ranks)
    assert selected[298] == selected[299] == ["before-spike"] and 297 not in selected
    assert _steps(298, 25, part.get(298)) == (7507 - REACH, 7474)
    assert 299 not in part  # whole
    assert _steps(300, 25, part.get(300)) == (7500, 7508 + AFTER_SPIKE)


def test_a_window_without_usable_marks_is_read_whole_with_its_history() -> None:
    """A flagged window whose marks could not be read (RankWindows.marks: its first and last step)
    is read whole, with the windows before it, as before spans."""
    selected, part = _plan([_rw(r, 200, 100, {40: (4000, 4099, -1, -1)}) for r in range(2)])
    assert 40 not in part and selected[39] == ["before-spike"] and part[39] == Part("tail", REACH)


def test_a_screen_window_keeps_its_whole_read() -> None:
    """A window that a screen also selects is read whole, its history before its first step."""
    red = rollup_read.reduce([_rw(r, 200, 100, {40: (4070, 4070, -1, -1)}) for r in range(2)])
    selected = rollup_read.select(red)
    selected[40].append("screen")
    selected[39] = ["before-spike"]
    part = rollup_read.parts(selected, 100, {}, spans=rollup_read.mark_spans(red))
    assert 40 not in part and part[39] == Part("tail", REACH)


def test_marks_are_read_from_the_index_line() -> None:
    """_marks_of: the usual empty marks unparsed; marks of either series; damage: -2 (the window is
    then read whole by _marks)."""
    line = (
        b'{"kind":"rollup","window":3,"screen":{"flags":4},"inputs":[2,"ab"],"shape":[1,"cd"],'
        b'"spikes":%s,"stats":{}}'
    )
    cut = (line % b"{}").find(rollup_read.CUT)
    assert rollup_read._marks_of(line % b"{}", cut) is None
    got = rollup_read._marks_of(line % b'{"loss":[2,310,315]}', cut)
    assert got == [310, 315, -1, -1]
    got = rollup_read._marks_of(line % b'{"gsq_global":[1,301,301],"loss":[1,302,302]}', cut)
    assert got == [302, 302, 301, 301]
    for bad in (b'{"loss":[1,"x",3]}', b'{"loss":[1,2]}', b"[1,2", b'{"loss":[1,-5,2]}', b"[" * 5000):
        assert rollup_read._marks_of(line % bad, cut)[:2] == [-2, -2], bad
    flags = np.asarray([LOSS_SPIKE, LOSS_SPIKE | GRAD_SPIKE, 0], dtype=np.int64)
    first, last = np.asarray([300, 400, 500]), np.asarray([399, 499, 599])
    marks = rollup_read._marks(
        flags, first, last, {0: [-2, -2, -1, -1], 1: [410, 420, 450, 600], 2: [510] * 4}
    )
    assert marks.tolist() == [[300, 399, -1, -1], [410, 420, 400, 499], [-1] * 4]


def test_span_cut_equals_a_split_into_lines(tmp_path: Path) -> None:
    """_span_cut against a plain split: records skip … skip + k − 1 of 100 step lines of random
    lengths with other records between them; None when the window holds fewer step lines."""
    data = random_window(2)
    (tmp_path / "f").write_bytes(b"HEAD\n" + data)
    a, b = 5, 5 + len(data)
    starts = [a + i for i in step_starts(data)] + [b]
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        for skip, k in ((0, 10), (1, 1), (10, 80), (45, 10), (70, 30), (99, 1), (0, 100), (30, 69)):
            want = (a if skip == 0 else starts[skip], starts[skip + k])
            assert rollup_read._span_cut(fd, a, b, 100, skip, k) == want, (skip, k)
        # fewer step lines than the index says, found from the head: None (from the tail the wrong
        # records are found, and the steps read do not match the index: rollup_read._mismatch)
        assert rollup_read._span_cut(fd, a, b, 300, 0, 150) is None
    finally:
        os.close(fd)


# --- end to end: a synthetic run whose spike windows no screen selects --------------------------

EVERY = 60


@pytest.fixture
def no_screens(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reduced-series screens off: the spike windows are selected by their marks alone."""
    monkeypatch.setattr(rollup_read, "_screen", lambda x: np.zeros(len(x), dtype=bool))


def _spiky(tmp: Path, world: int, steps: int = 1200, every: int = EVERY) -> Path:
    """Loss spikes at steps // 2 and 40 steps later, a gradient spike at steps // 3."""
    spec = SynthSpec(world_size=world, steps=steps, faults=("loss-spike", "grad-spike"))
    run = write_run(tmp / f"w{world}", spec)
    summarize.summarize(run, None, every=every)
    return run


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.usefixtures("no_screens")
def test_spans_read_the_steps_they_say_and_keep_the_spikes(world: int, tmp_path: Path) -> None:
    """Every rank holds exactly its windows' Part steps; the spikes, their steps and the
    spikes-clipping verdicts equal those of the same selection read whole."""
    run = _spiky(tmp_path, world)
    got = read_run(run, rollups="on")
    view = got.rollups
    assert view is not None
    spans = {w: p for w, p in view.parts.items() if "spike" in view.selected[w]}
    assert spans, view.parts  # some spike window read in part
    for rank, data in got.ranks.items():
        c = data.steps
        assert c is not None
        w = c.step // EVERY
        for win in view.selected:
            a, b = _steps(win, EVERY, view.parts.get(win))
            assert np.array_equal(c.step[w == win], np.arange(a, b + 1)), (rank, win, view.parts.get(win))
    rolled = diagnose_run(got)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rollup_read, "READ_IN_PART", False)
        whole = diagnose_run(read_run(run, rollups="on"))
    for fid in ("loss-spike", "grad-spike"):
        a = next(f for f in rolled.findings if f.id == fid)
        b = next(f for f in whole.findings if f.id == fid)
        assert a.status == b.status, fid
        assert [s["step"] for s in a.evidence.get("spikes", [])] == [
            s["step"] for s in b.evidence.get("spikes", [])
        ]
    assert {h.id: h.verdict for h in rolled.hypotheses}["spikes-clipping"] == {
        h.id: h.verdict for h in whole.hypotheses
    }["spikes-clipping"]


@pytest.mark.usefixtures("no_screens")
def test_a_damaged_span_falls_back_with_a_note(tmp_path: Path) -> None:
    """A span whose window holds fewer step lines than its index says (step lines made another
    kind, the same size): the rank is read whole and cut to the same steps, with a note."""
    run = _spiky(tmp_path, 2, steps=1330, every=100)  # a loss spike at 665: steps 610-680 of window 6
    view = read_run(run, rollups="on").rollups
    assert view is not None
    assert view.parts[6] == Part("span", 680 - 610 + 1, 10)
    win = 6
    data = records.rank_file(run, 1).read_bytes()
    damaged, at = bytearray(data), 0
    kept = 0
    for line in data.splitlines(keepends=True):
        if line.startswith(b'{"kind":"step","step":'):
            s = int(line[len(b'{"kind":"step","step":') :].split(b",", 1)[0])
            if s // 100 == win:
                if kept:
                    damaged[at : at + 15] = b'{"kind":"stex",'
                kept += 1
        at += len(line)
    records.rank_file(run, 1).write_bytes(bytes(damaged))
    os.utime(records.rank_file(run, 1))
    rolled = diagnose_run(read_run(run, rollups="on"))
    notes = " | ".join(rolled.run_info["problems"])
    assert "rank 1: " in notes and "fewer step lines" in notes and "read whole" in notes, notes
    c = rolled.context.run.ranks[1].steps
    assert c is not None and len(c.step[c.step // 100 == win]) == 1  # the one step line left: whole
