"""The watcher's incremental reader: a run read piece by piece equals the run read whole.

Synthetic run directories (tests/fixtures/synth_run.py) are copied into a "live" directory a few
lines at a time — cut mid-line, damaged, rotated, truncated, with nodes joining late — and after
every refresh the watcher's RunData must match `read_run` on the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.rundir import records
from ddp_doctor.rundir.reader import read_run
from ddp_doctor.watch.tail import RunTail


def same_run(a, b) -> None:
    """Two RunData hold the same data (columns, records, world size and problems)."""
    assert sorted(a.ranks) == sorted(b.ranks)
    assert a.world_size == b.world_size and a.in_progress == b.in_progress
    assert sorted(a.problems) == sorted(b.problems)
    assert sorted(a.damage) == sorted(b.damage)
    for r in a.ranks:
        x, y = a.ranks[r], b.ranks[r]
        for name in ("header", "end", "configs", "sampler", "replica", "headers_seen", "records", "lines"):
            assert getattr(x, name) == getattr(y, name), (r, name)
        for f in dataclasses.fields(x.steps):
            u, v = getattr(x.steps, f.name), getattr(y.steps, f.name)
            if isinstance(u, np.ndarray):
                assert u.dtype.kind == v.dtype.kind and u.shape == v.shape, (r, f.name)
                assert np.array_equal(u, v, equal_nan=u.dtype.kind == "f"), (r, f.name)
            elif f.name == "extra":
                assert sorted(u) == sorted(v)
                for k in u:
                    assert np.array_equal(u[k], v[k], equal_nan=True), (r, k)
            else:
                assert u == v, (r, f.name)


def _source(tmp_path: Path, **kw) -> Path:
    spec = SynthSpec(**{"world_size": 2, "steps": 60, **kw})
    return write_run(tmp_path / "source", spec)


def _live(src: Path, dst: Path) -> list[tuple[Path, bytes]]:
    """An empty live copy of ``src`` (manifest without end); the rank files' bytes to feed it."""
    (dst / records.RANKS_DIR).mkdir(parents=True)
    manifest = json.loads(records.manifest_path(src).read_text())
    manifest.pop("end", None)
    manifest.pop("exit_code", None)
    records.manifest_path(dst).write_text(json.dumps(manifest))
    return [
        (dst / records.RANKS_DIR / p.name, p.read_bytes())
        for p in sorted((src / records.RANKS_DIR).iterdir())
    ]


def _end(src: Path, dst: Path) -> None:
    shutil.copy(records.manifest_path(src), records.manifest_path(dst))


@pytest.mark.parametrize("world", [1, 2, 3])
def test_growing_files_cut_mid_line_match_the_whole_read(tmp_path, world):
    src = _source(tmp_path, world_size=world, steps=120, faults=("loss-spike",))
    live = tmp_path / "live"
    files = _live(src, live)
    tail = RunTail(live)
    assert tail.refresh() is None and "no rank data" in tail.waiting  # started, nothing written yet
    sizes = [len(b) for _, b in files]
    for frac in (0.013, 0.2, 0.21, 0.5, 0.77, 1.0):  # cuts fall mid-line: the half line waits
        for (path, data), n in zip(files, sizes):
            with open(path, "ab") as fh:
                fh.write(data[path.stat().st_size if path.exists() else 0 : int(n * frac)])
        run = tail.refresh()
        same_run(run, read_run(live, use_cache=False))
    assert tail.refresh() is not None and tail.new_bytes == 0 and not tail.changed  # nothing new: no work
    _end(src, live)
    run = tail.refresh()
    assert not run.in_progress and tail.changed
    same_run(run, read_run(live, use_cache=False))
    same_run(run, read_run(src, use_cache=False))


def test_damaged_lines_keep_their_line_numbers(tmp_path):
    src = _source(tmp_path)
    live = tmp_path / "live"
    files = _live(src, live)
    tail = RunTail(live)
    half = 0
    for path, data in files:
        lines = data.split(b"\n")
        half = len(lines) // 2
        path.write_bytes(b"\n".join(lines[:half]) + b"\n")
        tail.refresh()
        with open(path, "ab") as fh:  # a damaged line in the second piece, and a wrong type
            fh.write(b'{"kind": "step", "step": 3, "losses": [1.0,\n')
            fh.write(b'{"kind": "step", "step": "x"}\n')
            fh.write(b"\n".join(lines[half:]))
    run = tail.refresh()
    whole = read_run(live, use_cache=False)
    same_run(run, whole)  # the problems too: line numbers count from the file's start
    assert any(f"corrupt line(s) skipped (not a JSON record): line {half + 1}" in p for p in run.problems)


def test_rotated_truncated_and_rewritten_files_are_read_again(tmp_path):
    src = _source(tmp_path)
    live = tmp_path / "live"
    files = _live(src, live)
    (path, data), (path1, data1) = files
    path.write_bytes(data[: len(data) // 2])
    path1.write_bytes(data1)
    tail = RunTail(live)
    tail.refresh()
    # replaced: a new file renamed over the old one (a new inode), holding fewer steps
    fresh = live / "ranks" / "tmp"
    fresh.write_bytes(data[: len(data) // 3])
    os.replace(fresh, path)
    run = tail.refresh()
    assert any("replaced" in p and "read again" in p for p in run.problems)
    same_steps(run, read_run(live, use_cache=False))
    # truncated in place: shorter than what was read
    with open(path, "r+b") as fh:
        fh.truncate(len(data) // 5)
    run = tail.refresh()
    assert any("shrank" in p for p in run.problems)
    same_steps(run, read_run(live, use_cache=False))
    # rewritten in place, longer: the byte before the offset is no longer a newline
    with open(path, "r+b") as fh:
        fh.seek(0)
        fh.write(b" " * (len(data) // 5) + b"\n" + data)
    run = tail.refresh()
    assert any("rewritten" in p for p in run.problems)
    same_steps(run, read_run(live, use_cache=False))


def same_steps(a, b) -> None:
    for r in a.ranks:
        assert np.array_equal(a.ranks[r].steps.step, b.ranks[r].steps.step)
        assert np.array_equal(a.ranks[r].steps.losses, b.ranks[r].steps.losses, equal_nan=True)


def test_duplicate_steps_across_pieces_are_dropped_like_read_run(tmp_path):
    src = _source(tmp_path)
    live = tmp_path / "live"
    (path, data), (path1, data1) = _live(src, live)
    path1.write_bytes(data1)
    lines = data.split(b"\n")
    path.write_bytes(b"\n".join(lines[:40]) + b"\n")
    tail = RunTail(live)
    tail.refresh()
    with open(path, "ab") as fh:  # a restart writing steps again
        fh.write(b"\n".join(lines[20:40]) + b"\n")
    run = tail.refresh()
    whole = read_run(live, use_cache=False)
    same_steps(run, whole)
    assert any("duplicate step" in p for p in run.problems)
    assert any("duplicate step" in p for p in whole.problems)


def test_two_nodes_joining_late(tmp_path):
    """Instance manifests (one per `ddp-doctor run` of a node) and rank files appear one node after
    the other: the world grows, and the run ends only when every node has ended."""
    src = write_run(tmp_path / "source", SynthSpec(world_size=4, steps=40))
    manifest = json.loads(records.manifest_path(src).read_text())
    live = tmp_path / "live"
    (live / records.RANKS_DIR).mkdir(parents=True)
    tail = RunTail(live)
    assert tail.refresh() is None
    node = {k: v for k, v in manifest.items() if k not in ("end", "exit_code", "ranks")}

    def join(n: int, ranks: list[int], ended: bool = False) -> None:
        m = {**node, "instance": f"node-{n}", "instances_expected": 2}
        if ended:
            m.update(end=manifest["end"], exit_code=0, ranks=4)
        (live / f"manifest.node-{n}.json").write_text(json.dumps(m))
        for r in ranks:
            shutil.copy(records.rank_file(src, r), records.rank_file(live, r))

    join(0, [0, 1])
    run = tail.refresh()
    assert sorted(run.ranks) == [0, 1] and run.in_progress
    assert any("1 of 2 instance manifests" in p for p in run.problems)
    join(0, [0, 1], ended=True)  # node 0 done before node 1 even started: not the end of the run
    run = tail.refresh()
    assert run.in_progress
    join(1, [2, 3])
    run = tail.refresh()
    assert sorted(run.ranks) == [0, 1, 2, 3] and run.world_size == 4 and run.in_progress
    join(1, [], ended=True)
    run = tail.refresh()
    assert not run.in_progress
    same_run(run, read_run(live, use_cache=False))


@pytest.mark.parametrize("hostile", ["fifo", "symlink", "directory"])
def test_a_rank_file_that_is_not_a_regular_file_is_skipped(tmp_path, hostile):
    src = _source(tmp_path)
    live = tmp_path / "live"
    files = _live(src, live)
    files[0][0].write_bytes(files[0][1])
    bad = live / records.RANKS_DIR / records.rank_file_name(1)
    if hostile == "fifo":
        os.mkfifo(bad)
    elif hostile == "symlink":
        bad.symlink_to(files[0][0])
    else:
        bad.mkdir()
    run = RunTail(live).refresh()
    assert sorted(run.ranks) == [0]
    same_run(run, read_run(live, use_cache=False))


def test_a_line_longer_than_one_read_is_skipped_and_reading_goes_on(tmp_path, monkeypatch):
    from ddp_doctor.watch import tail as tail_module

    monkeypatch.setattr(tail_module, "MAX_READ_BYTES", 4096)
    src = _source(tmp_path)
    live = tmp_path / "live"
    (path, data), (path1, data1) = _live(src, live)
    path1.write_bytes(data1)
    lines = data.split(b"\n")
    path.write_bytes(b"\n".join(lines[:10]) + b"\n" + b"x" * 10_000 + b"\n" + b"\n".join(lines[10:]))
    tail = RunTail(live)
    for _ in range(200):  # a few KiB per refresh: catch up over many
        run = tail.refresh()
        if tail.new_bytes == 0:
            break
    assert any("line 11 is longer than 4096 bytes; skipped" in p for p in run.problems)
    same_steps(run, read_run(live, use_cache=False))  # the reader drops that line as corrupt


def test_a_torchrun_restart_moving_the_rank_files_away_is_followed(tmp_path):
    """--max-restarts: the earlier attempt's files go to RUN/attempts/0/, new ones start."""
    src = _source(tmp_path)
    live = tmp_path / "live"
    files = _live(src, live)
    for path, data in files:
        path.write_bytes(data)
    tail = RunTail(live)
    tail.refresh()
    (live / "attempts" / "0").mkdir(parents=True)
    for path, data in files:
        os.rename(path, live / "attempts" / "0" / path.name)
        path.write_bytes(data[: len(data) // 2])
    run = tail.refresh()
    same_steps(run, read_run(live, use_cache=False))
    assert any("replaced" in p for p in run.problems)
