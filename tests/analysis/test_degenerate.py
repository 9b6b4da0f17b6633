"""Issue 22: every quantity and check total over degenerate input, every rule only where its premise
holds. Runs are generated in memory (tests/fixtures/gen_run.py) and go through diagnose_run."""

from __future__ import annotations

import numpy as np
from fixtures.gen_run import adam, config, run_from_records, sgd, step

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.analysis.quantities.gns import ratio_with_stderr
from ddp_doctor.report.text import render_text


def by_id(diag):
    return {f.id: f for f in diag.findings}


def zero_loss_run(world: int = 2, steps: int = 40):
    """The ddp-tutorial-series script: cross_entropy over one class, loss 0, every gradient 0."""
    return run_from_records(
        {
            r: [sgd(lr=1e-3)] + [step(t, [0.0], grad_sq=(0.0, 0.0)) for t in range(steps)]
            for r in range(world)
        },
        world,
    )


def test_every_gradient_exactly_zero_does_not_crash_and_the_noise_scale_says_why():
    diag = diagnose_run(zero_loss_run())
    gns = diag.run_info["gradient_noise_scale"]
    assert gns["b_simple"] is None and "exactly 0" in gns["reason"]
    f = by_id(diag)["batch-below-noise-scale"]
    assert f.status == "not-measured" and "exactly 0" in f.summary
    render_text(diag, "en")


def test_ratio_with_stderr_is_total():
    nan, _, lower = ratio_with_stderr(np.zeros(30), np.zeros(30))
    assert np.isnan(nan) and lower
    b, _, _ = ratio_with_stderr(np.array([]), np.array([]))
    assert np.isnan(b)
    b, _, lower = ratio_with_stderr(np.full(30, np.nan), np.full(30, np.nan))
    assert np.isnan(b) and lower


def test_a_rank_with_step_records_but_no_micro_step_does_not_crash():
    """A damaged rank file: step records whose micro-step lists are all empty (sync_pattern indexed
    an empty array)."""
    good = [step(t, [1.0, 0.9]) for t in range(30)]
    empty = [step(t, []) for t in range(30)]
    diag = diagnose_run(run_from_records({0: good, 1: empty}, 2))
    assert diag.context.sync.steps == 30
    render_text(diag, "en")


def test_warmup_minimum_of_adam_is_not_applied_to_sgd():
    """imagenet/main.py: SGD with momentum, lr at its peak from step 0, an early loss spike."""
    loss = [2.0] * 60
    loss[3] = 9.0
    recs = [sgd()] + [step(t, [v]) for t, v in enumerate(loss)]
    f = by_id(diagnose_run(run_from_records({0: recs}, 1)))["warmup-short"]
    assert f.status == "not-measured", f.summary
    assert "2000" not in f.summary and "SGD" in f.summary and "no β2" in f.summary
    assert f.evidence["adam_rule_applies"] is False


def test_warmup_minimum_still_applies_to_adam():
    loss = [2.0] * 60
    loss[3] = 9.0
    recs = [adam(betas=(0.9, 0.95))] + [step(t, [v]) for t, v in enumerate(loss)]
    f = by_id(diagnose_run(run_from_records({0: recs}, 1)))["warmup-short"]
    assert f.status == "confirmed" and "2/(1-β2) = 40" in f.summary


def test_effective_batch_not_measured_says_why():
    recs = [sgd()] + [step(t, [1.0], samples=None) for t in range(20)]
    diag = diagnose_run(run_from_records({0: recs, 1: recs}, 2))
    eb = diag.run_info["effective_batch"]
    assert eb["samples"] is None and "micro-batch size" in eb["reason"]
    text = render_text(diag, "en")
    assert "None samples" not in text and "not measured (no micro-batch size" in text


def _bypassed_run(with_ddp: bool):
    recs = [sgd()] + ([config("ddp", n_params=2, n_trainable=2)] if with_ddp else [])
    recs += [step(t, [1.0 - 0.01 * t], sync=[0], grad_sq=None) for t in range(20)]
    return run_from_records({0: recs, 1: recs}, 2)


def test_ddp_bypassed_fix_fits_a_script_without_a_ddp_wrapper():
    """nanochat: no DDP wrapper at all, so "call `ddp_model(x)`" cannot be followed."""
    f = by_id(diagnose_run(_bypassed_run(with_ddp=False)))["ddp-bypassed"]
    assert f.status == "confirmed"
    assert "ddp_model(x)" not in f.fix and "No DistributedDataParallel wrapper" in f.fix
    assert "DistributedDataParallel" in f.fix_in("zh")


def test_ddp_bypassed_fix_with_a_wrapper_is_the_catalog_fix():
    f = by_id(diagnose_run(_bypassed_run(with_ddp=True)))["ddp-bypassed"]
    assert f.status == "confirmed" and "ddp_model(x)" in f.fix


def test_a_caused_effect_chains_the_fitted_fix():
    from ddp_doctor.analysis.fixes import refine_fixes
    from ddp_doctor.core.catalog import Text
    from ddp_doctor.core.findings import Finding

    cause = Finding("ddp-bypassed", "confirmed", "error", Text("x", "x"), {"ddp_wrapped": False})
    effect = Finding("replica-divergence", "confirmed", "error", Text("y", "y"))
    refine_fixes([cause, effect])
    assert "No DistributedDataParallel wrapper" in effect.fix and "ddp_model(x)" not in effect.fix


def test_the_noise_answer_names_the_missing_piece():
    """Fabric/Lightning with F.nll_loss unseen: 2 ranks × 1 micro-batch would predict the noise, the
    loss-function value is what is missing — the headline must say that, not 'needs ≥ 2 micro-batches'."""
    recs = [sgd()]
    for t in range(40):
        rec = step(t, [2.0 - 0.01 * t])
        rec.pop("loss_fn")
        recs.append(rec)
    diag = diagnose_run(run_from_records({0: recs, 1: recs}, 2))
    answer = diag.run_info["oscillation"]
    assert answer["answer"] == "not-measured"
    assert "no loss-function value was recorded" in answer["summary"], answer["summary"]
    assert "no loss-function value" in diag.run_info["noise_band"]["reason"]


def test_one_micro_batch_per_step_names_the_count():
    recs = [sgd()] + [step(t, [2.0 - 0.01 * t]) for t in range(40)]
    answer = diagnose_run(run_from_records({0: recs}, 1)).run_info["oscillation"]
    assert "at most 1 recorded in a step" in answer["summary"], answer["summary"]


def _confirmed(losses):
    diag = diagnose_run(run_from_records({0: [sgd()] + [step(t, [v]) for t, v in enumerate(losses)]}, 1))
    return {f.id for f in diag.findings if f.status == "confirmed"}


def test_a_negative_loss_is_no_early_spike_but_its_rise_is_one():
    """The early '> 2× the mean before' rule presumes a positive loss: -1 > 2 × -1 is no spike."""
    flat = [-1.0] * 60
    assert "loss-spike" not in _confirmed(flat)
    risen = [-2.0 + 0.001 * (i % 3) for i in range(60)]
    risen[45] = -0.2  # towards 0 is up for a negative loss
    assert "loss-spike" in _confirmed(risen)


def test_a_loss_of_zero_has_no_relative_spike():
    losses = [0.0] * 60
    losses[40] = 1e-6
    assert "loss-spike" not in _confirmed(losses)
