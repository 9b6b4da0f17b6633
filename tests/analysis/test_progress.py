"""training-not-progressing (issue 22, deliverable 4) and the verdict precedence it joins."""

from __future__ import annotations

import itertools

import pytest
from fixtures.gen_run import adam, config, run_from_records, sgd, step

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.analysis.precedence import PRECEDENCE, resolve
from ddp_doctor.core.catalog import HYPOTHESES, Text
from ddp_doctor.core.findings import Finding

STEPS = 30


def finding(diag, fid="training-not-progressing"):
    return next(f for f in diag.findings if f.id == fid)


def learning(t):
    return 2.0 * 0.98**t


def make(world=2, *, loss=learning, grad=(1.0, 0.5), lr=lambda t: 1e-3, extra=(), updates=None):
    per_rank = {}
    for r in range(world):
        recs = [adam(), *extra]
        for t in range(STEPS):
            recs.append(step(t, [loss(t) + 0.01 * r], grad_sq=grad, lr=lr(t)))
            if updates is not None and t % 5 == 4:
                recs.append(
                    {
                        "kind": "update",
                        "step": t,
                        "tensors": [
                            {
                                "name": "w",
                                "type": "matrix",
                                "numel": 10,
                                "param_norm": 1.0,
                                "update_norm": updates,
                            }
                        ],
                    }
                )
        per_rank[r] = recs
    return run_from_records(per_rank, world)


def test_a_learning_run_is_ruled_out_with_its_numbers():
    f = finding(diagnose_run(make(updates=1e-3)))
    assert f.status == "ruled-out", f.summary
    assert "gradient norm not 0 on 30 of 30 steps" in f.summary
    assert f.coverage is not None


def test_zero_gradients_and_zero_loss_are_confirmed():
    diag = diagnose_run(make(loss=lambda t: 0.0, grad=(0.0, 0.0)))
    f = finding(diag)
    assert f.status == "confirmed" and f.severity == "error"
    assert "gradient norm is exactly 0 on 30 of 30 steps" in f.summary and "loss is constant" in f.summary
    verdict = {h.id: h.verdict for h in diag.hypotheses}
    assert verdict["progress"] == "confirmed"
    assert diag.run_info["oscillation"]["not_progressing"] is True


def test_lr_zero_after_the_first_step_is_confirmed():
    f = finding(diagnose_run(make(lr=lambda t: 1e-3 if t == 0 else 0.0)))
    assert f.status == "confirmed" and "lr is exactly 0 on 29 of 29 steps" in f.summary


def test_lr_starting_at_zero_in_a_warmup_is_not_a_sign():
    f = finding(diagnose_run(make(lr=lambda t: 1e-4 * t, updates=1e-3)))
    assert f.status == "ruled-out", f.summary


def test_frozen_parameters_name_the_cause():
    ddp = config("ddp", n_params=10, n_trainable=1, n_trainable_numel=100)
    f = finding(diagnose_run(make(updates=0.0, extra=[ddp], grad=(None, None))))
    assert f.status == "confirmed", f.summary
    assert "every sampled parameter update is exactly 0" in f.summary
    assert "only 1 of 10 parameters require grad" in f.summary


def test_only_a_varying_loss_is_inconclusive():
    f = finding(diagnose_run(make(grad=(None, None))))
    assert f.status == "inconclusive" and "frozen model" in f.summary


def test_one_step_is_not_measured():
    run = run_from_records({0: [sgd(), step(0, [1.0])]}, 1)
    assert finding(diagnose_run(run)).status == "not-measured"


def test_the_new_hypothesis_holds_the_finding():
    assert HYPOTHESES["progress"].findings == ("training-not-progressing",)


def _f(fid, status):
    return Finding(fid, status, "warning" if status == "confirmed" else "info", Text("x", "x"))


@pytest.mark.parametrize("winner,loser", [(w, lo) for w, lo, _ in PRECEDENCE])
def test_precedence_never_leaves_both_confirmed(winner, loser):
    statuses = ("confirmed", "ruled-out", "inconclusive", "not-measured")
    for a, b in itertools.product(statuses, statuses):
        w, lo = _f(winner, a), _f(loser, b)
        resolve([w, lo])
        assert not (w.status == "confirmed" and lo.status == "confirmed")
        assert w.status == a  # the winner is never changed
        if a == b == "confirmed":
            assert lo.status == "inconclusive" and lo.evidence["overridden_by"] == winner
            assert f"Overridden by {winner}" in lo.summary


def test_every_check_module_declares_what_it_finds():
    """diagnose.run_findings skips a check whose FINDS no imported field feeds: a module without
    FINDS broke every imported-log report (AttributeError)."""
    from ddp_doctor.analysis.diagnose import CHECKS

    for module in CHECKS:
        assert module.FINDS and all(isinstance(i, str) for i in module.FINDS), module.__name__
