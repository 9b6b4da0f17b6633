"""Rollups at the source (probe/instruments/rollup.py) on a real 3-rank gloo run: the probe's own
rollups equal what `ddp-doctor summarize` computes from the raw records, and two "nodes" (ranks 0-1
and 2) reduce to the summary of all ranks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from rundir.test_rollup_index import assert_index_describes
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
        # the probe's index: true to the rank file, and its rollups are the rank file's (in the
        # index's order: screen first); summarize computes the same from the raw records
        entries = assert_index_describes(run, rank)
        bare = ("at", "others", "screen")
        assert [{k: v for k, v in e.items() if k not in bare} for e in entries] == probed
        assert [
            {k: v for k, v in json.loads(records.encode(r)).items() if k not in bare}
            for r in computed.rollups
        ] == probed
        assert [e["screen"] for e in entries] == [r["screen"] for r in computed.rollups]
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


def test_report_on_a_probed_run_reads_rollups_and_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real 3-rank gloo run, 400 steps, R = 10: the report's rollup path (with the first 40 steps
    as its early block and 3 sample blocks, so most windows come from the probe's rollups) gives the
    raw path's verdicts."""
    from rundir.test_rollup_read import _differences

    from ddp_doctor.analysis.diagnose import diagnose_run
    from ddp_doctor.rundir import rollup_read
    from ddp_doctor.rundir.reader import read_run

    run = tmp_path / "run"
    run_probe(
        run, torchrun("rollup_ddp.py", nproc=3), env=base_env(DDP_DOCTOR_ROLLUP_EVERY="10", STEPS="400")
    )
    monkeypatch.setattr(rollup_read, "EARLY_STEPS", 40)
    raw = diagnose_run(read_run(run, rollups="off"))
    rolled = diagnose_run(read_run(run, rollups="on", sample=3))
    view = rolled.context.run.rollups
    # the toy loss spikes (14 loss spikes on the raw path): those windows are read raw, not all
    assert view is not None and view.steps_total == 400 and view.raw_steps < 400, view.selected
    assert not [p for p in rolled.run_info["problems"] if "index" in p]  # the probe's indexes were used
    assert _differences(raw, rolled) == []


def test_an_index_that_cannot_be_written_stops_alone(tmp_path: Path) -> None:
    """The index's writer fails (injected): one `probe_error`, the rollups go on, and the report
    computes the missing index from the rank file and says so."""
    from ddp_doctor.analysis.diagnose import diagnose_run
    from ddp_doctor.rundir import rollup_index
    from ddp_doctor.rundir.reader import read_run

    run = tmp_path / "run"
    env = base_env(DDP_DOCTOR_ROLLUP_EVERY="7", STEPS="30", DDP_DOCTOR_PROBE_FAULT="rollup_index")
    run_probe(run, torchrun("rollup_ddp.py", nproc=2), env=env)
    for rank in range(2):
        recs = read_rank(run, rank)
        assert [e["instrument"] for e in kind(recs, "probe_error")] == ["rollup_index"]
        assert len(kind(recs, "rollup")) == 5 and not rollup_index.index_path(run, rank).exists()
    diag = diagnose_run(read_run(run, rollups="on"))
    assert any("without a usable rollup index (no rollup index)" in p for p in diag.run_info["problems"])
