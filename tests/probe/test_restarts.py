"""torchrun `--max-restarts`: a restarted worker starts a rank file of its own, the earlier
attempt's is set aside in RUN/attempts/<restart>/ranks/, and the report diagnoses the last
attempt and says how the earlier ones ended (probe/recorder.py, rundir/teardown.attempt_notes)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.probe.recorder import RankRecorder, set_aside_earlier_attempt
from ddp_doctor.rundir import records
from probe.helpers import DDP_DOCTOR, base_env, torchrun


def _header(rank: int, restart: int | None) -> dict:
    h = {"kind": "header", "schema": records.RANK_SCHEMA, "rank": rank, "world_size": 2}
    return h if restart is None else {**h, "restart": restart}


def test_a_restarted_worker_sets_the_earlier_attempts_file_aside(tmp_path):
    first = RankRecorder(tmp_path)
    first.open(1, _header(1, None))  # attempt 0 (torchrun sets TORCHELASTIC_RESTART_COUNT=0)
    first.write({"kind": "step", "step": 0})
    first.close()
    second = RankRecorder(tmp_path)
    second.open(1, _header(1, 1))
    second.write({"kind": "step", "step": 0})
    second.close()
    current = records.rank_file(tmp_path, 1).read_text().splitlines()
    assert [json.loads(line).get("restart") for line in current[:1]] == [1] and len(current) == 2
    kept = tmp_path / records.ATTEMPTS_DIR / "0" / records.RANKS_DIR / records.rank_file_name(1)
    assert [json.loads(line)["kind"] for line in kept.read_text().splitlines()] == ["header", "step"]


def test_nothing_is_moved_for_the_same_attempt_or_through_a_symlink(tmp_path):
    path = records.rank_file(tmp_path, 0)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_header(0, 2)) + "\n")
    assert (
        set_aside_earlier_attempt(tmp_path, path, 2) is None
    )  # same attempt: a second writer, not a restart
    path.write_text(json.dumps(_header(0, 0)) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / records.ATTEMPTS_DIR)
    assert set_aside_earlier_attempt(tmp_path, path, 1) is None
    assert path.exists() and not any(elsewhere.iterdir())


def test_the_report_diagnoses_the_last_attempt_and_names_the_earlier_failure(tmp_path):
    run = write_run(tmp_path / "run", SynthSpec(steps=20, accum=1))
    old = run / records.ATTEMPTS_DIR / "0" / records.RANKS_DIR
    old.mkdir(parents=True)
    (old / records.rank_file_name(1)).write_text(
        json.dumps(_header(1, 0))
        + "\n"
        + "".join(json.dumps({"kind": "step", "step": s, "micro_steps": 1}) + "\n" for s in range(5))
        + json.dumps({"kind": "end", "steps": 5, "reason": "exit", "exception": "RuntimeError: boom"})
        + "\n"
    )
    (old / records.rank_file_name(0)).write_text(json.dumps(_header(0, 0)) + "\n")
    diag = diagnose(run)
    problems = diag.run_info["problems"]
    assert any(
        p.startswith("torchrun restarted the workers: this report diagnoses the last attempt")
        for p in problems
    )
    assert (
        "attempt 0 (2 rank file(s), up to 5 step(s)): rank 1 raised RuntimeError: boom; rank 0 wrote no `end`"
        in ("\n".join(problems))
    )
    assert diag.run_info["optimizer_steps"] == 20 and not diag.run_info["damaged"]


@pytest.mark.slow  # one failed and one restarted 2-rank attempt: ~60 s here; torch's own restart is flaky
def test_max_restarts_with_a_failed_first_attempt_is_diagnosed_on_the_last_attempt(tmp_path):
    out = tmp_path / "run"
    cmd = torchrun("rank_fails.py")
    cmd.insert(cmd.index("--standalone") + 1, "--max-restarts=1")
    proc = subprocess.run(
        [*DDP_DOCTOR, "run", "--out", str(out), "--", *cmd],
        env=base_env(FAIL_ATTEMPT="0"),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for rank in (0, 1):
        lines = records.rank_file(out, rank).read_text().splitlines()
        assert json.loads(lines[0])["restart"] == 1
        assert (out / records.ATTEMPTS_DIR / "0" / records.RANKS_DIR / records.rank_file_name(rank)).exists()
    report = subprocess.run(
        [*DDP_DOCTOR, "report", str(out), "--format", "json"], capture_output=True, text=True, env=base_env()
    )
    run = json.loads(report.stdout)["run"]
    assert run["optimizer_steps"] == 8 and run["failure"] is None and not run["damaged"]
    assert not any("duplicate" in p for p in run["problems"]), run["problems"]
    assert any("attempt 0" in p and "boom at step 5" in p for p in run["problems"]), run["problems"]
