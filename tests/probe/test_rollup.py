"""Rollups at the source (probe/instruments/rollup.py) on a real 3-rank gloo run: the probe's own
rollups equal what `ddp-doctor summarize` computes from the raw records, and two "nodes" (ranks 0-1
and 2) reduce to the summary of all ranks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from rundir.test_rollups import CLI, assert_summaries_equal

from ddp_doctor.rundir import records, summarize
from probe.helpers import base_env, kind, read_rank, run_probe, torchrun

pytestmark = pytest.mark.distributed


def test_probe_rollups_equal_summarize_and_nodes_reduce(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_probe(run, torchrun("rollup_ddp.py", nproc=3), env=base_env(DDP_DOCTOR_ROLLUP_EVERY="7", STEPS="45"))
    for rank in range(3):
        recs = read_rank(run, rank)
        assert kind(recs, "probe_error") == []
        probed = kind(recs, "rollup")
        assert [r["window"] for r in probed] == list(range(7)) and probed[-1]["steps"] == 3
        assert all(r["stats"]["micro_steps"][2] == 2 * r["steps"] for r in probed)
        # the window's rollup follows its last step record and precedes the next window's steps
        order = [(r["kind"], r.get("step", r.get("window"))) for r in recs if r["kind"] in ("step", "rollup")]
        assert order.index(("rollup", 0)) == order.index(("step", 6)) + 1
        computed = summarize.rollups_of_file(records.rank_file(run, rank), rank, every=7)
        assert computed.problems == []
        assert [json.loads(records.encode(r)) for r in computed.rollups] == probed
    for ranks in ("0-1", "2"):
        proc = subprocess.run(
            [*CLI, "summarize", str(run), "--ranks", ranks, "--window", "7"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
    assert subprocess.run([*CLI, "summarize", str(run), "--reduce"], timeout=120).returncode == 0
    reduced = json.loads((run / "rollups" / "summary.json").read_text())
    whole, _ = summarize.summarize(run, None, every=7, force=True)
    assert_summaries_equal(reduced, json.loads(json.dumps(records.jsonable(whole))))
    assert reduced["windows"]["0"]["ranks"] == 3 and len(reduced["windows"]["0"]["digests"]) == 3


def test_rollups_off(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_probe(run, torchrun("rollup_ddp.py", nproc=2), env=base_env(DDP_DOCTOR_ROLLUP_EVERY="0", STEPS="5"))
    assert kind(read_rank(run, 0), "rollup") == [] and kind(read_rank(run, 0), "step")
