"""Every runtime finding: confirmed on a synthetic run with its fault, ruled out on the clean run."""

from __future__ import annotations

import pytest

from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES

# synthetic fault (tests/fixtures/synth_run.py) → finding it must confirm, extra spec fields
CASES = [
    ("sampler-missing", "sampler-missing", {}),
    ("set-epoch-missing", "set-epoch-missing", {}),
    ("rank-skew", "rank-data-skew", {}),
    ("loss-unscaled", "accum-loss-unscaled", {}),
    ("zero-grad-per-micro", "zero-grad-inside-accum", {}),
    ("sync-every-micro", "accum-no-sync-missing", {}),
    ("sync-toggle-after-forward", "no-sync-after-forward", {}),
    ("replica-desync", "replica-divergence", {}),
    ("uneven", "accum-uneven", {}),
    ("bypass-ddp", "ddp-bypassed", {}),
    ("per-microbatch-mean-loss", "loss-normalization-variable-tokens", {}),
    ("sched-per-micro", "scheduler-per-microstep", {}),
    ("loss-spike", "loss-spike", {}),
    ("grad-spike", "grad-spike", {}),
    ("clip-saturated", "clip-saturated", {}),
    ("clip-before-unscale", "clip-before-unscale", {}),
    ("fp16-overflow", "fp16-overflow", {}),
    ("fp16-no-scaler", "fp16-no-scaler", {}),
    ("nonfinite", "nonfinite", {}),
    ("adam-eps", "adam-eps-dominated", {"level": "full"}),
    ("update-ratio-high", "update-ratio-high", {"level": "full"}),
    ("compile-numerics", "compile-numerics", {"level": "full", "compile": True}),
    ("find-unused", "find-unused-true", {}),
    ("unused", "unused-parameters", {}),
    ("batchnorm", "batchnorm-unsynced", {}),
    ("warmup-short", "warmup-short", {}),
    ("grads-unsynced", "grads-not-synced", {}),
    ("grad-scale-sum", "grad-scale-wrong", {}),
    ("per-rank-token-mean", "loss-norm-per-rank-tokens", {}),
]


def _by_id(diag):
    return {f.id: f for f in diag.findings}


@pytest.mark.parametrize("fault,fid,extra", CASES, ids=[c[1] for c in CASES])
def test_fault_confirms_its_finding(diag_of, fault, fid, extra):
    f = _by_id(diag_of(faults=(fault,), **extra))[fid]
    assert f.status == "confirmed", f.summary
    assert f.severity == FINDINGS[fid].severity
    assert f.evidence, "a confirmed finding carries its numbers"


@pytest.mark.parametrize("fault,fid,extra", CASES, ids=[c[1] for c in CASES])
def test_clean_run_does_not_confirm_it(diag_of, fault, fid, extra):
    f = _by_id(diag_of(**extra))[fid]
    assert f.status == "ruled-out", f.summary


def test_clean_run_has_no_warning_or_error(diag_of):
    diag = diag_of(level="full", compile=True)
    loud = [f.id for f in diag.findings if f.status == "confirmed" and f.severity != "info"]
    assert loud == []
    assert {h.verdict for h in diag.hypotheses} <= {"ruled-out", "not-measured", "inconclusive"}


def test_every_finding_and_hypothesis_gets_a_status(diag_of):
    diag = diag_of()
    assert {f.id for f in diag.findings} == set(FINDINGS)
    assert [h.id for h in diag.hypotheses] == list(HYPOTHESES)


def test_clean_level_full_rules_out_every_hypothesis_but_logging(diag_of):
    diag = diag_of(level="full", compile=True)
    verdicts = {h.id: h.verdict for h in diag.hypotheses}
    assert verdicts.pop("logging") == "inconclusive"  # rank0-only-loss-log needs the script's log
    assert set(verdicts.values()) == {"ruled-out"}, verdicts


def test_pure_minibatch_noise_is_within_the_noise_band(diag_of):
    f = _by_id(diag_of())["oscillation-within-noise"]
    assert f.status == "confirmed"
    assert 0.7 < f.evidence["ratio"] < 1.5


def test_real_oscillation_is_not_within_the_noise_band(diag_of):
    f = _by_id(diag_of(faults=("oscillation",)))["oscillation-within-noise"]
    assert f.status == "ruled-out"
    assert f.evidence["ratio"] > 1.5


def test_batch_far_below_noise_scale_is_confirmed(diag_of):
    # B_simple = d s^2/|G|^2 = 32 * 5^2 = 800 samples vs an effective batch of 8
    f = _by_id(diag_of(grad_noise=5.0))["batch-below-noise-scale"]
    assert f.status == "confirmed"
    assert f.evidence["effective_batch_samples"] == 8


def test_compile_before_ddp_is_reported_as_info_and_does_not_confirm_compile(diag_of):
    diag = diag_of(compile=True, compile_order="before_ddp", level="full")
    f = _by_id(diag)["compile-before-ddp"]
    assert (f.status, f.severity) == ("confirmed", "info")
    assert {h.id: h.verdict for h in diag.hypotheses}["compile"] == "ruled-out"


def test_logged_rank0_loss_confirms_rank0_only_loss_log(diag_of):
    f = _by_id(diag_of(trainer_metrics=True, extra={"rank0_log": True}))["rank0-only-loss-log"]
    assert f.status == "confirmed"
    g = _by_id(diag_of(trainer_metrics=True))["rank0-only-loss-log"]
    assert g.status == "ruled-out"


def test_grad_spike_reports_the_lag_to_the_loss_spike(diag_of):
    f = _by_id(diag_of(faults=("grad-spike",)))["grad-spike"]
    assert f.evidence["lag_to_loss_spike"][0]["lag"] == 1


def test_not_measured_says_what_to_enable(diag_of):
    f = _by_id(diag_of())["update-ratio-high"]
    assert f.status == "not-measured"
    assert "--level full" in f.summary


def test_grad_spike_absorbed_by_clipping_without_loss_spike_is_not_confirmed(diag_of):
    f = _by_id(diag_of(faults=("grad-spike-clipped",)))["grad-spike"]
    assert f.status == "ruled-out"
    assert f.evidence["count"] == 1 and f.evidence["absorbed_by_clipping"] == 1
