"""Import TensorBoard event files written by torch.utils.tensorboard.SummaryWriter, with known faults."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from .conftest import need

STEPS = 200
SPIKE = 150  # loss spike (and grad-norm spike the step before)
WARMUP = 20


def _write(
    log_dir: Path, names: dict[str, str] | None = None, every: int = 1, nan_at: int | None = None
) -> None:
    need("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    n = {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm", "loss_scale": "loss_scale"}
    n.update(names or {})
    rng = np.random.default_rng(0)
    w = SummaryWriter(str(log_dir))
    scale = 65536.0
    for t in range(0, STEPS, every):
        loss = 2.0 + 3.0 * math.exp(-t / 60) + 0.02 * rng.standard_normal()
        if t == SPIKE:
            loss *= 3
        if nan_at is not None and t == nan_at:
            loss = float("nan")
        grad = 2.0 + 0.05 * rng.standard_normal() + (30.0 if t == SPIKE - 1 else 0.0)
        if t > 40 and t % 10 == 3:
            scale /= 2  # a GradScaler backing off again and again: overflow after the start
        elif t % 5 == 0:
            scale *= 2 if t < 30 else 1
        w.add_scalar(n["loss"], loss, t)
        w.add_scalar(n["lr"], 1e-3 * min(1.0, (t + 1) / WARMUP), t)
        w.add_scalar(n["grad_norm"], grad, t)
        w.add_scalar(n["loss_scale"], scale, t)
    w.close()


def test_faults_in_summarywriter_logs_are_confirmed(tmp_path: Path) -> None:
    from ddp_doctor.report.load import load

    _write(tmp_path / "tb")
    r = load(tmp_path / "tb", max_norm=1.0, world_size=8, micro_batch=4, accum=2, tokens_per_sample=512)
    assert r.run["imported"]["keys"] == {
        "loss": "train/loss",
        "lr": "train/lr",
        "grad_norm": "train/grad_norm",
        "loss_scale": "loss_scale",
    }
    assert r.finding("loss-spike").status == "confirmed"
    assert r.finding("loss-spike").evidence["spikes"][0]["step"] == SPIKE
    grad = r.finding("grad-spike")
    assert grad.status == "confirmed" and grad.evidence["spikes"][0]["step"] == SPIKE - 1
    assert grad.evidence["lag_to_loss_spike"][0]["lag"] == 1
    assert r.finding("fp16-overflow").status == "confirmed"
    assert r.finding("clip-saturated").status == "confirmed"  # grad norm ~2 > max_norm 1 everywhere
    assert r.finding("warmup-short").evidence["warmup_steps"] == WARMUP - 1
    assert r.run["effective_batch"]["samples"] == 8 * 4 * 2
    assert r.run["effective_batch"]["tokens"] == 8 * 4 * 2 * 512
    assert r.run["world_size"] == 8
    assert r.finding("oscillation-within-noise").status == "not-measured"
    assert "per-micro-batch" in r.finding("oscillation-within-noise").summary


def test_key_overrides_map_custom_names(tmp_path: Path) -> None:
    from ddp_doctor.report.load import load
    from ddp_doctor.rundir.reader import RunDirError

    _write(tmp_path / "tb", names={"loss": "my/objective", "lr": "opt/step_size"})
    with pytest.raises(RunDirError, match="--key loss=NAME"):
        load(tmp_path / "tb")
    r = load(tmp_path / "tb", keys={"loss": "my/objective", "lr": "opt/step_size"})
    assert r.run["imported"]["keys"]["loss"] == "my/objective"
    assert r.finding("loss-spike").status == "confirmed"
    assert r.finding("warmup-short").status != "not-measured"


def test_nan_loss_is_a_nonfinite_finding(tmp_path: Path) -> None:
    from ddp_doctor.report.load import load

    _write(tmp_path / "tb", nan_at=120)
    f = load(tmp_path / "tb").finding("nonfinite")
    assert f.status == "confirmed" and f.evidence["first_step"] == 120


def test_sparse_logs_cannot_rule_spikes_out(tmp_path: Path) -> None:
    from ddp_doctor.report.load import load

    _write(tmp_path / "tb", every=10)
    r = load(tmp_path / "tb")
    assert r.run["imported"]["log_interval"] == 10
    # the spike step 150 is logged: a spike seen is a spike; with every 10th step the rule cannot judge
    assert r.finding("grad-spike").status == "not-measured"
    assert "Logged every 10 steps" in r.finding("grad-spike").summary


def test_a_log_dir_with_several_runs_imports_one_and_names_the_others(tmp_path: Path) -> None:
    from ddp_doctor.report.load import load

    _write(tmp_path / "logs" / "a")
    _write(tmp_path / "logs" / "b")
    r = load(tmp_path / "logs")
    assert any("2 TensorBoard runs" in p for p in r.run["problems"])


def test_a_damaged_event_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    from ddp_doctor.report.load import load

    _write(tmp_path / "tb")
    (event,) = (tmp_path / "tb").glob("events.out.tfevents.*")
    data = event.read_bytes()
    event.write_bytes(data[: len(data) // 2] + b"\x00garbage")  # killed mid-write and then scribbled on
    r = load(event)  # the complete records before the damage are read
    assert r.run["imported"]["steps"] > 0
