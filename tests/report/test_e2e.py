"""End to end: the reference trainer under `ddp-doctor run` (2 gloo ranks), then `report`.

Each test starts torchrun with two ranks that import transformers: ~45-90 s on 2 shared cores, so
they are marked slow (run them with `pytest -m slow tests/report/test_e2e.py`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import teardown_race

pytestmark = [pytest.mark.slow, pytest.mark.distributed]
TIMEOUT_S = 420


def _run_and_report(tmp_path: Path, *trainer_args: str) -> dict:
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "ddp_doctor.cli",
        "run",
        "--out",
        str(run),
        "--every",
        "5",
        "--",
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "ddp_doctor.trainer",
        "--accum",
        "2",
        "--micro-batch",
        "2",
        "--no-progress",
        "--out-dir",
        str(run / "trainer"),
        *trainer_args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0 or teardown_race.tolerated(proc, run, "e2e trainer"), (
        proc.stdout[-2000:] + proc.stderr[-4000:]
    )
    rep = subprocess.run(
        [sys.executable, "-m", "ddp_doctor.cli", "report", str(run), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rep.returncode == 0, rep.stderr
    return json.loads(rep.stdout)


def test_clean_reference_run_has_no_warning_or_error(tmp_path):
    data = _run_and_report(tmp_path, "--steps", "12")
    loud = [f["id"] for f in data["findings"] if f["status"] == "confirmed" and f["severity"] != "info"]
    assert loud == []
    by_id = {f["id"]: f for f in data["findings"]}
    for fid in (
        "sampler-missing",
        "accum-no-sync-missing",
        "replica-divergence",
        "ddp-bypassed",
        "accum-loss-unscaled",
        "loss-normalization-variable-tokens",
        "scheduler-per-microstep",
    ):
        assert by_id[fid]["status"] == "ruled-out", by_id[fid]
    assert data["run"]["effective_batch"]["samples"] == 2 * 2 * 2


def test_demo_faults_are_confirmed(tmp_path):
    data = _run_and_report(
        tmp_path,
        "--steps",
        "30",
        "--dataset-docs",
        "64",
        "--warmup-steps",
        "4",
        "--fault",
        "rank0-loss-log",
        "--fault",
        "sched-per-micro",
        "--fault",
        "no-set-epoch",
    )
    status = {f["id"]: f["status"] for f in data["findings"]}
    assert status["set-epoch-missing"] == "confirmed"
    assert status["scheduler-per-microstep"] == "confirmed"
    assert status["rank0-only-loss-log"] == "confirmed"
    verdicts = {h["id"]: h["verdict"] for h in data["hypotheses"]}
    assert verdicts["data-order"] == verdicts["lr-schedule"] == verdicts["logging"] == "confirmed"
