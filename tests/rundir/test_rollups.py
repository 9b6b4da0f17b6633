"""Rollups (rundir/rollups.py) and `ddp-doctor summarize` (rundir/summarize.py): map per "node", reduce.

The reduce of two nodes' summaries equals one summary of all ranks: counts, min, max, first/last
anomaly steps, digests exactly; float sums within REL_TOL (a different order of additions).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.rundir import records, rollups, summarize

REL_TOL = 1e-12
CLI = [sys.executable, "-m", "ddp_doctor.cli"]


def assert_summaries_equal(a: dict[str, Any], b: dict[str, Any]) -> None:
    def close(x: Any, y: Any, where: str) -> None:
        if isinstance(x, dict):
            assert isinstance(y, dict) and sorted(x) == sorted(y), where
            for k in x:
                close(x[k], y[k], f"{where}.{k}")
        elif isinstance(x, list):
            assert isinstance(y, list) and len(x) == len(y), where
            for i, (u, v) in enumerate(zip(x, y)):
                # STAT: index 2, 3 are sums; everything else exact
                if where.endswith(tuple(f".{s}" for s in rollups.SERIES)) and i in (
                    rollups.SUM,
                    rollups.SUMSQ,
                ):
                    assert math.isclose(u, v, rel_tol=REL_TOL, abs_tol=1e-300), (where, i, u, v)
                else:
                    close(u, v, f"{where}[{i}]")
        else:
            assert x == y, (where, x, y)

    close(
        {k: v for k, v in a.items() if k != "problems"}, {k: v for k, v in b.items() if k != "problems"}, ""
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "summarize", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def run4(tmp_path: Path) -> Path:
    spec = SynthSpec(world_size=4, steps=330, faults=("loss-spike", "nonfinite", "sampler-missing"))
    return write_run(tmp_path / "run", spec)


def test_two_nodes_reduce_to_the_summary_of_all_ranks(run4: Path, tmp_path: Path) -> None:
    for ranks in ("0-1", "2-3"):
        proc = _cli(str(run4), "--ranks", ranks, "--window", "50")
        assert proc.returncode == 0, proc.stderr
    proc = _cli(str(run4), "--reduce", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    reduced = json.loads((run4 / "rollups" / "summary.json").read_text())
    whole, _ = summarize.summarize(run4, None, every=50, force=True)
    whole = json.loads(json.dumps(records.jsonable(whole)))
    assert_summaries_equal(reduced, whole)
    assert sorted(reduced["ranks"]) == ["0", "1", "2", "3"]
    assert len(reduced["windows"]) == 7  # 330 steps / 50
    w0 = reduced["windows"]["0"]
    assert w0["ranks"] == 4 and w0["steps"] == 200
    # sampler-missing: every rank reads the same batches, so one digest for all four ranks
    assert list(w0["digests"].values()) == [4]
    # the anomalies are found and placed: the nonfinite fault's record at step 165 on rank 1
    marked = {k: v["stats"]["nonfinite"][rollups.SUM] for k, v in reduced["windows"].items()}
    assert marked == {"0": 0, "1": 0, "2": 0, "3": 1, "4": 0, "5": 0, "6": 0}
    assert reduced["ranks"]["1"]["stats"]["nonfinite"][rollups.SUM] == 1
    # the loss-spike fault (+3 at steps 165 and 205, within one rank's noise: z 2-5.6 per rank, so
    # the per-rank screen need not mark it) still shows in the window maxima
    top = {k: v["stats"]["loss"][rollups.MAX] for k, v in reduced["windows"].items()}
    assert top["3"] > max(top["2"], top["5"], top["6"]) and top["4"] > max(top["5"], top["6"])


def test_rollups_of_one_rank_match_the_raw_records(run4: Path) -> None:
    res = summarize.rollups_of_file(records.rank_file(run4, 2), 2, every=100)
    raw = [json.loads(line) for line in records.rank_file(run4, 2).read_text().splitlines()]
    steps = [records.sanitize(r, []) for r in raw if r["kind"] == "step"]
    assert [r["steps"] for r in res.rollups] == [100, 100, 100, 30]
    losses = [rollups.step_values(s)["loss"] for s in steps[:100]]
    stat = res.rollups[0]["stats"]["loss"]
    finite = [x for x in losses if x is not None and math.isfinite(x)]
    assert stat[rollups.N] == 100 and stat[rollups.MIN] == min(finite) and stat[rollups.MAX] == max(finite)
    assert math.isclose(stat[rollups.SUM], math.fsum(finite), rel_tol=1e-12)
    mean, std = rollups.mean_std(stat)
    assert math.isclose(mean, math.fsum(finite) / len(finite), rel_tol=1e-12) and std > 0


def test_reuse_force_and_symlinks_are_never_followed(run4: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = summarize.rollup_file(run4, 0)
    target.symlink_to(victim)
    summarize.summarize(run4, (0, 0), every=100)
    assert victim.read_text() == "keep" and not target.is_symlink()
    first = target.read_bytes()
    res = summarize._map_one((str(run4), str(records.rank_file(run4, 0)), 0, 100, False))
    head, *lines = [json.loads(x) for x in first.splitlines()]
    assert head["kind"] == "rollup_index" and head["ino"] == records.rank_file(run4, 0).stat().st_ino
    assert res.reused and res.rollups == lines
    assert not summarize._map_one((str(run4), str(records.rank_file(run4, 0)), 0, 50, False)).reused
    # a rollups/ that is a symlink is refused
    out = run4 / "rollups"
    for p in out.iterdir():
        p.unlink()
    out.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.symlink_to(elsewhere)
    proc = _cli(str(run4), "--ranks", "0-1")
    assert proc.returncode == 2 and "symlink" in proc.stderr and not list(elsewhere.iterdir())


def test_damaged_and_hostile_rank_files_give_notes(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=60))
    path = records.rank_file(run, 1)
    with open(path, "ab") as f:
        f.write(b'{"kind":"step","step":"x"}\n{"kind":"step",broken\n[1,2]\n{"kind":"step","step":999}')
    os.mkfifo(run / "ranks" / "rank-00005.jsonl")
    summary, _ = summarize.summarize(run, None, every=25)
    assert summary["ranks"]["1"]["steps"] == 60  # the cut last line is not a record (as the reader reads it)
    assert any("damaged" in p for p in summary["problems"])
    assert any("rank-00005" in p for p in summary["problems"])
    assert _cli(str(run), "--ranks", "3-1").returncode == 2
    assert _cli(str(tmp_path / "nope")).returncode == 2
    assert _cli(str(tmp_path / "nope"), "--reduce").returncode == 2


def test_jobs_give_the_same_summary(run4: Path) -> None:
    one, _ = summarize.summarize(run4, None, every=40, force=True)
    two, _ = summarize.summarize(run4, None, every=40, jobs=2, force=True)
    assert json.dumps(records.jsonable(one)) == json.dumps(records.jsonable(two))


def test_spike_screen_matches_the_rule_on_a_step_series() -> None:
    acc = rollups.RollupAccumulator(rank=0, every=1000)
    for t in range(200):
        loss = 3.0 + 0.01 * math.sin(t) + (5.0 if t == 120 else 0.0)
        acc.feed({"kind": "step", "step": t, "losses": [loss]})
    rec = acc.flush()
    assert rec is not None and rec["spikes"]["loss"] == [1, 120, 120]
