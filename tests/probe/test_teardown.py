"""Teardown aborts after complete training vs real crashes (ddp_doctor.rundir.teardown, launch/exits.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ddp_doctor.launch import exits
from ddp_doctor.rundir.teardown import EXITS_SUBDIR, RACE, classify_run, classify_trainer
from probe.helpers import DDP_DOCTOR, base_env, run_probe, torchrun


def _rank(run: Path, rank: int, world: int, steps: int, end: dict | None = None, extra: str = "") -> None:
    lines = [{"kind": "header", "rank": rank, "world_size": world, "schema": "ddp-doctor.rank/1"}]
    lines += [{"kind": "step", "step": s, "micro_steps": 1} for s in range(steps)]
    if end is not None:
        lines.append({"kind": "end", "steps": steps, "reason": "exit", **end})
    (run / "ranks").mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in lines) + extra
    (run / "ranks" / f"rank-{rank:05d}.jsonl").write_text(text)


def _failures(run: Path, failures: dict[int, int]) -> None:
    (run / EXITS_SUBDIR).mkdir(parents=True, exist_ok=True)
    record = {"failures": {str(r): {"exitcode": c} for r, c in failures.items()}}
    (run / EXITS_SUBDIR / "exits-h-1-1.json").write_text(json.dumps(record))


def _complete(run: Path, world: int = 2, steps: int = 3) -> None:
    for r in range(world):
        _rank(run, r, world, steps, end={})


def test_abort_after_every_rank_ended_is_a_completed_run_with_the_note(tmp_path):
    _complete(tmp_path)
    _failures(tmp_path, {1: -6})
    status = classify_run(tmp_path, 1)
    assert status.ok and status.completed and status.teardown_ranks == (1,)
    assert status.code == 1  # the launcher's code is kept
    assert status.note == (
        "training completed; rank 1 aborted at interpreter teardown after its last step "
        "(a known torch/gloo teardown race)"
    )


def test_ranks_the_launcher_stopped_after_the_abort_are_named_not_blamed(tmp_path):
    _complete(tmp_path, world=3)
    _failures(tmp_path, {2: -6, 0: -15, 1: -9})
    status = classify_run(tmp_path, 1)
    assert status.ok and status.teardown_ranks == (2,)
    assert status.note.endswith("; the launcher then stopped ranks 0, 1")


def test_a_rank_stopped_before_its_end_but_after_the_final_step_still_completed(tmp_path):
    _rank(tmp_path, 0, 2, 3)  # SIGTERM'd in teardown, before its atexit `end`
    _rank(tmp_path, 1, 2, 3, end={})
    _failures(tmp_path, {1: -6, 0: -15})
    assert classify_run(tmp_path, 1).ok


def test_a_rank_killed_mid_run_stays_a_crash(tmp_path):
    _rank(tmp_path, 0, 2, 1)  # stopped at step 1 of 3
    _rank(tmp_path, 1, 2, 3, end={})
    _failures(tmp_path, {1: -6, 0: -15})
    status = classify_run(tmp_path, 1)
    assert not status.ok and not status.completed and status.note is None
    _rank(tmp_path, 0, 2, 3, end={})
    _failures(tmp_path, {0: -9})
    _rank(tmp_path, 1, 2, 2)  # SIGKILLed: no `end`, and no abort anywhere
    assert not classify_run(tmp_path, 137).ok


def test_an_exception_recorded_in_end_is_not_a_completed_run(tmp_path):
    _rank(tmp_path, 0, 2, 3, end={})
    _rank(tmp_path, 1, 2, 3, end={"exception": "RuntimeError: boom"})
    _failures(tmp_path, {1: 1, 0: -15})
    status = classify_run(tmp_path, 1)
    assert not status.ok and not status.completed and status.note is None


def test_a_non_signal_failure_after_the_last_step_is_said_but_not_excused(tmp_path):
    _complete(tmp_path)
    _failures(tmp_path, {1: 3})
    status = classify_run(tmp_path, 1)
    assert status.completed and not status.ok and status.teardown_ranks == ()
    assert "rank 1: exit 3" in status.note and RACE not in status.note


def test_without_launcher_reports(tmp_path):
    single = tmp_path / "single"
    _rank(single, 0, 1, 3, end={})
    status = classify_run(single, 134)  # `ddp-doctor run -- python train.py`: 128 + SIGABRT
    assert status.ok and status.teardown_ranks == (0,)
    multi = tmp_path / "multi"
    _complete(multi)
    status = classify_run(multi, 1)
    assert not status.ok and status.completed and "did not report" in status.note
    assert classify_run(multi, 0).ok and classify_run(multi, 0).note is None


def test_missing_rank_file_is_not_completed(tmp_path):
    _rank(tmp_path, 0, 2, 3, end={})
    _failures(tmp_path, {1: -6})
    assert not classify_run(tmp_path, 1).ok


def test_hostile_files_are_read_safely(tmp_path):
    _complete(tmp_path)
    os.unlink(tmp_path / "ranks" / "rank-00001.jsonl")
    os.mkfifo(tmp_path / "ranks" / "rank-00001.jsonl")  # would hang a plain open()
    (tmp_path / EXITS_SUBDIR).mkdir()
    (tmp_path / EXITS_SUBDIR / "exits-a.json").write_text("[" * 100_000)
    (tmp_path / EXITS_SUBDIR / "exits-b.json").write_text('{"failures": {"x": 1, "2": {"exitcode": "6"}}}')
    os.symlink("/etc/passwd", tmp_path / EXITS_SUBDIR / "exits-c.json")
    status = classify_run(tmp_path, 1)
    assert not status.ok and status.failures == {}


def test_trainer_without_probe_completed_by_its_final_metrics(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in (0, 5, 9)))
    _failures(tmp_path, {3: -6})
    assert classify_trainer(tmp_path, 1, 10, "metrics.jsonl").ok
    assert not classify_trainer(tmp_path, 1, 11, "metrics.jsonl").ok  # the last step is missing
    _failures(tmp_path, {3: 1})
    assert not classify_trainer(tmp_path, 1, 10, "metrics.jsonl").ok


def test_launcher_hook_writes_each_failure(tmp_path, monkeypatch):
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    monkeypatch.setenv(exits.ENV_EXITS_DIR, str(tmp_path / "launcher"))
    original = ChildFailedError.__init__
    try:
        exits.install()
        exits.install()  # idempotent
        failure = ProcessFailure(local_rank=1, pid=42, exitcode=-6, error_file="<N/A>")
        error = ChildFailedError("train.py", {3: failure})
        assert error.failures[3] is failure  # torch's own object is intact
    finally:
        ChildFailedError.__init__ = original
    (written,) = (tmp_path / "launcher").glob("exits-*.json")
    record = json.loads(written.read_text())
    assert record["failures"] == {"3": {"exitcode": -6, "signal": "SIGABRT", "pid": 42, "local_rank": 1}}
    assert written.stat().st_mode & 0o777 == 0o600


def test_run_and_report_tell_the_truth_about_a_teardown_abort(tmp_path):
    """E2E: rank 1 aborts (SIGABRT) after the probe's `end`; `run` keeps torchrun's code and says so."""
    out = tmp_path / "run"
    proc = run_probe(out, torchrun("teardown_abort.py"), env=base_env(ABORT_RANK="1"), check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "training completed; rank 1 aborted at interpreter teardown after its last step" in proc.stderr
    report = _report_json(out)
    assert report["run"]["exit_code"] == 1
    assert report["run"]["exit_status"]["teardown_ranks"] == [1]
    assert report["run"]["exit_status"]["completed"] is True


@pytest.mark.slow
def test_an_abort_in_the_middle_of_training_is_reported_as_a_crash(tmp_path):
    out = tmp_path / "run"
    proc = run_probe(out, torchrun("teardown_abort.py"), env=base_env(ABORT_AT="loop"), check=False)
    assert proc.returncode != 0 and "training completed" not in proc.stderr
    status = _report_json(out)["run"]["exit_status"]
    assert status["completed"] is False and status["note"] is None and status["failures"]["1"] == -6


def _report_json(out: Path) -> dict:
    import subprocess

    rep = subprocess.run(
        [*DDP_DOCTOR, "report", str(out), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=base_env(),
    )
    assert rep.returncode == 0, rep.stderr[-3000:]
    return json.loads(rep.stdout)
