"""DdpDoctorCallback with the real HF Trainer (tiny Llama) and Lightning, on CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import teardown_race

from ddp_doctor.trainer.launch import free_port

from .conftest import HF_STEPS, SCRIPTS, clean_env, need


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "trainer" / "metrics.jsonl").read_text().splitlines()]


def test_hf_callback_records_the_run_the_logged_loss_and_the_verdict(hf_run: Path) -> None:
    run_dir = hf_run / "ddp-doctor"
    assert (run_dir / "ranks" / "rank-00000.jsonl").exists()
    logged = _metrics(run_dir)
    assert [m["step"] for m in logged] == list(range(HF_STEPS))
    report = json.loads((run_dir / "report.json").read_text())
    assert report["schema"] == "ddp-doctor.report/1"
    assert report["run"]["optimizer_steps"] == HF_STEPS
    assert (run_dir / "report.html").exists()
    # the logged loss is the loss the probe measured at that step (one rank: rank 0's = global)
    from ddp_doctor.report.load import load

    series = load(run_dir).diagnosis.context.series
    for m in logged:
        assert m["loss"] == pytest.approx(series.global_loss[m["step"]], rel=1e-5)


def _torchrun(args: list[str], out: Path, nproc: int) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}"]
    cmd += [f"--master_port={free_port()}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=clean_env(out.parent), timeout=900)


@pytest.mark.slow
def test_hf_callback_on_two_gloo_ranks(tmp_path: Path) -> None:
    need("transformers")
    out = tmp_path / "out"
    proc = _torchrun([str(SCRIPTS / "hf_tiny_llama.py"), str(out), "--steps", "30", "--callback"], out, 2)
    run_dir = out / "ddp-doctor"
    assert proc.returncode == 0 or teardown_race.tolerated(proc, run_dir, "hf callback 2 ranks"), proc.stderr[
        -3000:
    ]
    assert sorted(p.name for p in (run_dir / "ranks").iterdir()) == ["rank-00000.jsonl", "rank-00001.jsonl"]
    report = json.loads((run_dir / "report.json").read_text())
    by_id = {f["id"]: f for f in report["findings"]}
    assert report["run"]["world_size"] == 2
    # the callback reports at train end, before the final checksum (written at process-group
    # destruction): checksums at steps 0, 10, 20 of 30 cover < 75 % of the run → inconclusive
    replica = by_id["replica-divergence"]
    assert replica["status"] in ("ruled-out", "inconclusive") and replica["evidence"]["checked_steps"]
    assert by_id["sampler-missing"]["status"] == "ruled-out"
    # HF logs the loss gathered over ranks: the logged loss is the global one, not rank 0's
    assert by_id["rank0-only-loss-log"]["status"] == "ruled-out", by_id["rank0-only-loss-log"]


@pytest.mark.slow  # ~30 s (importing lightning); the HF callback test is the cheap representative
def test_lightning_callback_single_process(tmp_path: Path) -> None:
    need("lightning")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "lightning_tiny.py"), str(out)],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = out / "ddp-doctor"
    logged = _metrics(run_dir)
    assert [m["step"] for m in logged] == list(range(30))
    report = json.loads((run_dir / "report.json").read_text())
    assert report["run"]["optimizer_steps"] == 30
    by_id = {f["id"]: f for f in report["findings"]}
    assert by_id["warmup-short"]["evidence"]["warmup_steps"] == 4  # LambdaLR min(1, (s+1)/5)
    assert "ddp-doctor: " in proc.stdout  # the summary printed at the end


@pytest.mark.slow
def test_lightning_callback_on_two_gloo_ranks(tmp_path: Path) -> None:
    need("lightning")
    out = tmp_path / "out"
    proc = _torchrun([str(SCRIPTS / "lightning_tiny.py"), str(out), "--devices", "2"], out, 2)
    run_dir = out / "ddp-doctor"
    assert proc.returncode == 0 or teardown_race.tolerated(proc, run_dir, "lightning 2 ranks"), proc.stderr[
        -3000:
    ]
    report = json.loads((run_dir / "report.json").read_text())
    by_id = {f["id"]: f for f in report["findings"]}
    assert report["run"]["world_size"] == 2
    assert report["run"]["ranks_present"] == [0, 1]
    assert report["run"]["optimizer_steps"] == 30
    assert by_id["scheduler-per-microstep"]["status"] == "ruled-out"
    assert [m["step"] for m in _metrics(run_dir)] == list(range(30))  # rank 0 only
