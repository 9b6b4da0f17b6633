"""Issue 11: the oscillation answer's statistics, per-type update ratios, coverage of "ruled out",
fixes that know the run's other findings, and facts that are not diagnoses (synthetic inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from ddp_doctor.analysis.answer import explaining
from ddp_doctor.analysis.fixes import refine_fixes
from ddp_doctor.analysis.make import MIN_COVERAGE, confirmed, coverage, ruled_out
from ddp_doctor.analysis.quantities.oscillation import (
    chi2_quantile,
    oscillation,
    robust_second_diff_std,
)
from ddp_doctor.analysis.quantities.update_ratio import EARLY_STEPS, THRESHOLDS, update_ratios
from ddp_doctor.core.catalog import Text

Z = 1.959964


@pytest.mark.parametrize(("nu", "p_z", "exact"), [(10, Z, 20.483), (10, -Z, 3.247), (100, Z, 129.56)])
def test_chi2_quantile_matches_tables_within_two_percent(nu, p_z, exact):
    assert chi2_quantile(p_z, nu) == pytest.approx(exact, rel=0.02)


def _noise_run(T: int, sigma_obs: float, sigma_pred: float, seed: int = 0, slope: float = -0.01):
    rng = np.random.default_rng(seed)
    loss = 5.0 + slope * np.arange(T) + rng.normal(0, sigma_obs, T)
    return oscillation(loss, np.full(T, sigma_pred), np.full(T, 7.0))


def test_second_differences_remove_a_linear_trend():
    x = 3.0 - 0.5 * np.arange(40.0)  # steep trend, no noise
    std, n = robust_second_diff_std(x)
    assert n == 38 and std == pytest.approx(0.0, abs=1e-12)


def test_noise_at_the_predicted_level_is_never_called_a_bug():
    decisions = [_noise_run(200, 0.1, 0.1, seed).decision for seed in range(20)]
    assert "above-band" not in decisions
    assert decisions.count("within-band") >= 10  # 200 steps decide most of them


def test_oscillation_far_above_the_band_is_decided_in_fewer_than_63_steps():
    o = _noise_run(40, 0.5, 0.1)
    assert o.decision == "above-band" and o.ratio_low > 1.5 and o.steps_used == 38


def test_undecided_states_the_run_length_that_would_decide():
    o = _noise_run(20, 0.15, 0.1, seed=3)
    assert o.decision == "undecided"
    assert o.steps_needed is not None and o.steps_needed > 20
    longer = _noise_run(o.steps_needed + 50, 0.15, 0.1, seed=3)
    assert longer.ratio_high - longer.ratio_low < o.ratio_high - o.ratio_low


def test_no_prediction_is_not_measured_with_a_reason():
    o = oscillation(np.linspace(5, 4, 30), np.full(30, np.nan), np.zeros(30))
    assert o.decision == "not-measured" and "micro-batches" in o.reason


def _update_record(step: int, ratios: dict[str, float]) -> dict:
    return {
        "kind": "update",
        "step": step,
        "tensors": [
            {"name": f"{t}.w", "type": t, "param_norm": 1.0, "update_norm": r} for t, r in ratios.items()
        ],
    }


def test_update_ratio_judges_late_steps_per_type_and_never_biases():
    healthy = {"norm": 2e-3, "embedding": 0.03, "matrix": 0.02, "bias": 5.0}
    early_only_high = [_update_record(s, {**healthy, "norm": 0.5}) for s in range(0, EARLY_STEPS, 5)]
    late = [_update_record(s, healthy) for s in range(EARLY_STEPS, 50, 5)]
    u = update_ratios(early_only_high + late, [])
    assert u.high == {}  # young-model steps and the zero-initialised bias do not count
    assert set(u.judged) == {"norm", "embedding", "matrix"}
    hot = update_ratios([_update_record(s, {**healthy, "norm": 0.05}) for s in range(0, 50, 5)], [])
    assert hot.high == {"norm": pytest.approx(0.05)} and THRESHOLDS["norm"] < 0.05


def test_update_ratio_falls_back_to_level_full_groups():
    full = [
        {"kind": "full", "step": s, "groups": {"norm": {"param_norm": 10.0, "update_norm": 0.5}}}
        for s in (10, 20, 30)
    ]
    u = update_ratios([], full)
    assert u.source.startswith("level full") and u.high == {"norm": pytest.approx(0.05)}


def test_ruled_out_states_its_coverage_and_small_coverage_is_inconclusive():
    full = ruled_out(
        "replica-divergence", Text("Equal.", "一致。"), coverage=coverage(48, 48, Text("checksums", "校验"))
    )
    assert full.status == "ruled-out" and "over 48 of 48 optimizer steps" in full.summary
    assert full.to_report_json()["coverage"]["fraction"] == 1.0
    part = ruled_out(
        "replica-divergence", Text("Equal.", "一致。"), coverage=coverage(1, 48, Text("step 0", "第 0 步"))
    )
    assert part.status == "inconclusive" and f"{MIN_COVERAGE:.0%}" in part.summary


def test_replica_check_from_one_early_checksum_is_inconclusive(diag_of):
    diag = diag_of(steps=200, every=120)  # one common checksum, at step 119 of 200
    f = {f.id: f for f in diag.findings}["replica-divergence"]
    assert f.status == "inconclusive" and f.coverage["steps_covered"] == 120
    assert "no final-state checksum" in f.summary


def test_every_runtime_ruled_out_carries_coverage(diag_of):
    diag = diag_of()
    outs = [f for f in diag.findings if f.status == "ruled-out"]
    assert outs and all(f.coverage and f.coverage["steps_total"] == 300 for f in outs)


def test_replica_divergence_fix_points_at_a_confirmed_sync_toggle():
    fs = [
        confirmed("replica-divergence", Text("differ", "不同")),
        confirmed("no-sync-after-forward", Text("toggled late", "晚切换")),
    ]
    refine_fixes(fs)
    assert fs[0].fix.startswith("Confirmed in this run and a cause of this: no-sync-after-forward")
    assert fs[0].evidence["explained_by"] == ["no-sync-after-forward"]
    alone = [confirmed("replica-divergence", Text("differ", "不同"))]
    refine_fixes(alone)
    assert "seed every rank identically" in alone[0].fix


def test_explaining_ranks_causes_before_symptoms():
    fs = [
        confirmed("loss-unstable", Text("x", "x")),
        confirmed("update-ratio-high", Text("x", "x")),
        confirmed("accum-loss-unscaled", Text("x", "x")),
        confirmed("find-unused-true", Text("x", "x")),  # info: not an explanation
    ]
    assert explaining(fs) == ["accum-loss-unscaled", "update-ratio-high", "loss-unstable"]


def test_bucket_settings_are_observed_facts_and_clean_runs_confirm_no_problem(diag_of):
    diag = diag_of()
    by_id = {f.id: f for f in diag.findings}
    assert by_id["ddp-bucket-config"].status == "observed"
    problems = [f.id for f in diag.findings if f.status == "confirmed" and f.severity != "info"]
    assert problems == []
    assert by_id["loss-unstable"].status == "ruled-out"
    assert diag.run_info["oscillation"]["decision"] in ("within-band", "undecided")


def test_accum_no_sync_ruled_out_text_reads_without_contradiction(diag_of):
    f = {f.id: f for f in diag_of(faults=("sync-toggle-after-forward",)).findings}["accum-no-sync-missing"]
    assert f.status == "ruled-out"
    assert "all-reduced on every micro-step in only 0 of" in f.summary
    assert "another pattern (see no-sync-after-forward)" in f.summary


def test_answer_compares_the_logged_loss_with_the_global_band_when_captured(make_run):
    from ddp_doctor.analysis.answer import oscillation_answer
    from ddp_doctor.analysis.context import build_context
    from ddp_doctor.rundir.reader import read_run

    ctx = build_context(read_run(make_run(steps=120)))
    rng = np.random.default_rng(0)
    noisy = ctx.series.global_loss + rng.normal(0, 4 * ctx.oscillation.predicted_std, ctx.series.n_steps)
    ctx.run.ranks[0].logged_loss = [  # what probe/capture writes (capture branch): one per step
        {"kind": "logged_loss", "step": t, "source": "stdout", "key": "loss", "value": float(v), "rank": 0}
        for t, v in enumerate(noisy)
    ] + [{"kind": "logged_loss", "step": 5, "source": "stdout", "key": "val_loss", "value": 1.0, "rank": 0}]
    answer = oscillation_answer(ctx, [])
    logged = answer["logged"]
    assert logged["key"] == "loss" and logged["values"] == ctx.series.n_steps
    assert logged["over_global_band_low"] > 1.5
    assert "The loss the script logs (stdout 'loss', rank 0)" in answer["summary"]
