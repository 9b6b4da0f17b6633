"""`compare` on real runs of the reference trainer under `ddp-doctor run` (gloo, CPU ranks).

The three situations of the forum question, each against the same one-process baseline:
(a) 2 ranks at the same global batch → equivalent, `--assert-equal` passes at its default tolerance;
(b) 4 ranks with the same per-rank batch (4× the global batch) → noisier/smoother by the batch only;
(c) ranks whose lr scheduler steps per micro-batch → not explained, the fault named as the cause.
(a) and (c) run in CI on 2 ranks and 12 steps; (b) needs ~40 steps for a noise verdict and the
4-rank variants are slow-marked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import teardown_race

DDP_DOCTOR = [sys.executable, "-m", "ddp_doctor.cli"]
TIMEOUT_S = 420


def _train(out: Path, world: int, accum: int, steps: int, *extra: str) -> Path:
    trainer = ["-m", "ddp_doctor.trainer", "--preset", "tiny", "--steps", str(steps), "--accum", str(accum),
               "--micro-batch", "2", "--seq-len", "48", "--lr", "1e-3", "--warmup-steps", "4",
               "--dataset-docs", "256", "--no-progress", *extra]  # fmt: skip
    if world == 1:
        launch = [sys.executable, *trainer]
    else:
        launch = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={world}",
            *trainer,
        ]
    env = {**__import__("os").environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [*DDP_DOCTOR, "run", "--out", str(out), "--", *launch],
        capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
    )  # fmt: skip
    assert proc.returncode == 0 or teardown_race.tolerated(proc, out, f"compare {out.name}"), proc.stderr[
        -3000:
    ]
    return out


def _compare(a: Path, b: Path, *flags: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [*DDP_DOCTOR, "compare", str(a), str(b), "--format", "json", *flags],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    return _train(tmp_path_factory.mktemp("cmp") / "one", 1, 8, 12)


@pytest.mark.distributed
def test_same_global_batch_on_two_ranks_is_equivalent_and_passes_assert_equal(baseline, tmp_path):
    two = _train(tmp_path / "two", 2, 4, 12)
    code, data = _compare(baseline, two, "--assert-equal")
    assert code == 0, data["curves"]
    assert data["conclusion"] == "equivalent", data["causes"]
    assert data["data_order"]["same"] is True
    assert data["curves"]["leaves_band_at_samples"] is None
    assert data["causes"] == []


@pytest.mark.distributed
def test_scheduler_per_micro_step_on_two_ranks_is_named_as_the_cause(baseline, tmp_path):
    faulty = _train(tmp_path / "sched", 2, 4, 12, "--fault", "sched-per-micro")
    code, data = _compare(baseline, faulty, "--assert-equal")
    assert code == 1  # the curves differ
    assert data["conclusion"] == "not-explained"
    keys = [c["key"] for c in data["causes"]]
    assert keys[0] == "finding:scheduler-per-microstep", keys
    assert "scheduler-steps" in keys
    assert "scheduler-per-microstep" in data["headline"]


@pytest.mark.slow
@pytest.mark.distributed
def test_four_ranks_four_times_the_batch_is_explained_by_the_batch(tmp_path):
    one = _train(tmp_path / "one", 1, 8, 40)
    four = _train(tmp_path / "four", 4, 8, 40)
    _, data = _compare(one, four, "--batch-a", "16")
    assert data["curves"]["axis"] == "samples"
    assert data["runs"]["b"]["settings"]["batch_samples"] == 64
    assert data["noise"]["batch_only_ratio"] == pytest.approx(0.5)
    assert data["noise"]["explained"] is True, data["noise"]
    assert data["conclusion"] in ("explained", "equivalent"), data["causes"]


@pytest.mark.slow
@pytest.mark.distributed
def test_four_ranks_with_per_microbatch_mean_loss_is_not_explained(tmp_path):
    one = _train(tmp_path / "one", 1, 8, 20)
    four = _train(tmp_path / "four", 4, 8, 20, "--fault", "per-microbatch-mean-loss")
    _, data = _compare(one, four, "--batch-a", "16")
    assert data["conclusion"] == "not-explained"
    assert data["causes"][0]["key"] == "finding:loss-normalization-variable-tokens", data["causes"]


@pytest.mark.slow
@pytest.mark.distributed
def test_demo_compare_runs_one_and_four_ranks_and_writes_the_comparison(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        [*DDP_DOCTOR, "demo", "--compare", "--steps", "12", "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0 or teardown_race.looks_like_teardown_abort(proc), proc.stderr[-3000:]
    assert "Most likely causes" in proc.stdout
    assert (out / "compare.html").read_text().count("<svg") == 2
    assert (out / "one-rank" / "manifest.json").exists() and (out / "4-ranks" / "manifest.json").exists()
