"""zero-grad-inside-accum from where each zero_grad call came (`zero_grad_after_backward`).

Lightning's `Trainer(accumulate_grad_batches=4)` calls zero_grad twice at the start of each
accumulation window, before its first backward (bench/real_scripts.py, lightning row): two calls
per step, none of which wipes a gradient. The classic bug zero-grads before every micro-step's
backward: calls after a backward of the same step. Run dirs written before the field existed keep
the count rule (more than one call per step).
"""

from __future__ import annotations

from fixtures.gen_run import adam, run_from_records, step

from ddp_doctor.analysis.diagnose import diagnose_run

ACCUM = 4
STEPS = 12


def _diagnose(zero_grad: int, after: int | None):
    per_rank = {}
    for r in range(2):
        recs = [adam()]
        for t in range(STEPS):
            rec = step(t, [1.0 - 0.01 * t + 0.001 * r] * ACCUM)
            rec["zero_grad"] = zero_grad
            if after is not None:
                rec["zero_grad_after_backward"] = after
            recs.append(rec)
        per_rank[r] = recs
    diag = diagnose_run(run_from_records(per_rank, 2))
    return next(f for f in diag.findings if f.id == "zero-grad-inside-accum")


def test_two_calls_before_the_first_backward_are_ruled_out():
    f = _diagnose(zero_grad=2, after=0)
    assert f.status == "ruled-out", f.summary
    assert f.evidence["median_zero_grad_after_backward"] == 0
    assert f"in {STEPS * 2} of {STEPS * 2} accumulation steps" in f.summary


def test_calls_between_micro_steps_are_confirmed():
    f = _diagnose(zero_grad=ACCUM, after=ACCUM - 1)
    assert f.status == "confirmed", f.summary
    assert f.evidence["steps_with_extra_zero_grad"] == STEPS * 2


def test_one_call_after_the_last_backward_wipes_too():
    # zero_grad after the window's backwards but before step(): the update sees no gradient
    assert _diagnose(zero_grad=1, after=1).status == "confirmed"


def test_older_run_dirs_keep_the_count_rule():
    assert _diagnose(zero_grad=2, after=None).status == "confirmed"
    assert _diagnose(zero_grad=1, after=None).status == "ruled-out"
