"""Import what a real HF Trainer wrote (trainer_state.json and its TensorBoard events)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ddp_doctor
from ddp_doctor.analysis.reduced import NEEDS

from .conftest import HF_STEPS


def _measured(report) -> set[str]:
    return {f.id for f in report.findings if f.status != "not-measured"}


def test_trainer_state_loss_equals_the_probes_global_loss(hf_run: Path) -> None:
    imported = ddp_doctor.load(hf_run / "trainer_state.json")
    probed = ddp_doctor.load(hf_run / "ddp-doctor")
    a = imported.diagnosis.context.series.global_loss
    b = probed.diagnosis.context.series.global_loss
    assert a.shape == b.shape == (HF_STEPS,)
    # HF logs the mean loss of each step (logging_steps=1); the probe measures the same loss
    np.testing.assert_allclose(a, b, rtol=1e-5)
    assert imported.run["imported"]["keys"] == {
        "loss": "loss",
        "grad_norm": "grad_norm",
        "lr": "learning_rate",
        "epoch": "epoch",
    }
    # gradient norms: HF logs clip_grad_norm_'s return value, the probe records the same call
    np.testing.assert_allclose(
        imported.diagnosis.context.grad_norm, probed.diagnosis.context.grad_norm, rtol=1e-4
    )


def test_tensorboard_events_from_the_trainer_give_the_same_series(hf_run: Path) -> None:
    state = ddp_doctor.load(hf_run / "trainer_state.json")
    tb = ddp_doctor.load(hf_run / "runs")
    assert tb.run["imported"]["source"] == "tensorboard"
    assert tb.run["imported"]["keys"]["loss"] == "train/loss"
    # TensorBoard stores float32
    np.testing.assert_allclose(
        tb.diagnosis.context.series.global_loss, state.diagnosis.context.series.global_loss, rtol=1e-6
    )
    np.testing.assert_allclose(tb.diagnosis.context.series.lr, state.diagnosis.context.series.lr, rtol=1e-6)


def test_only_supported_findings_are_measured_the_rest_need_ddp_doctor_run(hf_run: Path) -> None:
    report = ddp_doctor.load(hf_run / "trainer_state.json", world_size=1, max_norm=1.0)
    assert _measured(report) == set(NEEDS) - {"fp16-overflow"}  # no loss scale in an fp32 run
    for f in report.findings:
        if f.id not in NEEDS or f.id == "fp16-overflow":
            assert f.status == "not-measured"
            assert "ddp-doctor run" in f.summary
    # the logged lr is the one each step used: same warmup as the probe measured (warmup_steps=5)
    probed = ddp_doctor.load(hf_run / "ddp-doctor")
    np.testing.assert_allclose(report.diagnosis.context.series.lr, probed.diagnosis.context.series.lr)
    assert report.finding("warmup-short").evidence["warmup_steps"] == 5
    assert probed.finding("warmup-short").evidence["warmup_steps"] == 5
    assert report.run["effective_batch"]["samples"] == 4  # train_batch_size 4 × world size 1
    assert report.run["world_size"] == 1


def test_without_max_norm_clip_saturation_is_not_measured(hf_run: Path) -> None:
    report = ddp_doctor.load(hf_run / "trainer_state.json")
    assert report.finding("clip-saturated").status == "not-measured"
    assert report.finding("grad-spike").status != "not-measured"
