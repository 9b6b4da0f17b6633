"""Property-based tests over diagnose_run with generated runs (issue 22, deliverable 1).

Hypothesis builds runs record by record (tests/fixtures/gen_run.py: encoded as the probe writes,
parsed by the reader): world sizes 1–4, a rank with nothing, steps with no micro-steps, zero /
constant / NaN / inf losses and gradients, no lr or lr 0, SGD / Adam / no optimizer / damaged betas,
several samplers iterated at any epoch value (peeks, repeats), sampled updates, logged losses.
Properties: no exception leaves diagnose_run or the renderers; no check had to be caught
(`could not run on this data` is a crash the report hid); every catalog ID and hypothesis has a
status; a precedence pair is never confirmed together; a not-measured or inconclusive finding
says why (a non-empty summary).
"""

from __future__ import annotations

import math

from fixtures.gen_run import adam, config, run_from_records, sampler, sgd, step
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.analysis.precedence import PRECEDENCE
from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES
from ddp_doctor.report.text import render_text
from ddp_doctor.report.to_json import render_json

LOSS = st.one_of(
    st.just(0.0),
    st.just(-0.0),
    st.just(2.5),
    st.just(math.nan),
    st.just(math.inf),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
)
GRAD = st.one_of(st.none(), st.just(0.0), st.just(math.nan), st.floats(min_value=0.0, max_value=1e6))
LR = st.one_of(st.none(), st.just(0.0), st.just(1e-3), st.floats(min_value=0.0, max_value=10.0))
OPTIMIZER = st.sampled_from(
    [
        None,
        sgd(),
        adam(),
        adam(betas=(0.9, 0.95)),
        config("optimizer", type="AdamW", groups=[{"lr": 1e-3, "betas": [0.9]}]),
        config("optimizer", type="Lion", groups=[{"lr": 1e-4, "betas": [0.9, 0.99]}]),
        config("optimizer", type="AdamW", groups=[]),
    ]
)


# Run-wide modes, so that the degenerate shapes (every gradient 0, a loss of 0 throughout) appear on
# every rank at once, as in a real run, and not only as one random value among others.
GRAD_MODES = {"random": GRAD, "zero": st.just(0.0), "none": st.none()}
LOSS_MODES = {"random": LOSS, "zero": st.just(0.0), "nan": st.just(math.nan)}


@st.composite
def rank_records(draw, n_steps: int, grad_mode: str = "random", loss_mode: str = "random") -> list[dict]:
    recs: list[dict] = []
    opt = draw(OPTIMIZER)
    if opt is not None:
        recs.append(opt)
    if draw(st.booleans()):
        recs.append(config("ddp", n_params=draw(st.integers(0, 5)), n_trainable=draw(st.integers(0, 5))))
    constant = draw(st.booleans())
    loss_st, grad_st = LOSS_MODES[loss_mode], GRAD_MODES[grad_mode]
    base = draw(loss_st)
    for t in range(n_steps):
        m = draw(st.integers(0, 3))
        losses = [base] * m if constant else [draw(loss_st) for _ in range(m)]
        sync = [draw(st.sampled_from([0, 1, 3])) for _ in range(m)]
        recs.append(
            step(
                t,
                losses,
                samples=draw(st.one_of(st.none(), st.integers(0, 8))),
                sync=sync,
                grad_sq=(draw(grad_st), draw(grad_st)),
                lr=draw(LR),
                sched_steps=draw(st.integers(-1, 4)),
            )
        )
        if draw(st.integers(0, 6)) == 0:  # a sampler iteration (any sampler, any epoch, peeks)
            rec = sampler(
                t, draw(st.integers(0, 3)), draw(st.integers(0, 2)), sid=draw(st.sampled_from([None, 0, 1]))
            )
            if draw(st.booleans()):
                rec["shuffle"] = draw(st.booleans())
                rec["prev_drawn"] = draw(st.integers(0, 64))
                rec["prev_steps"] = draw(st.integers(0, 10))
            recs.append(rec)
        if draw(st.integers(0, 5)) == 0:
            norm = draw(st.sampled_from([0.0, 1e-3, math.nan]))
            recs.append(
                {
                    "kind": "update",
                    "step": t,
                    "tensors": [{"name": "w", "type": "matrix", "update_norm": norm, "param_norm": 1.0}],
                }
            )
        if draw(st.integers(0, 4)) == 0:
            recs.append(
                {
                    "kind": "logged_loss",
                    "step": t,
                    "micro": 0,
                    "source": "stdout",
                    "key": "loss",
                    "value": draw(LOSS),
                    "resolution": 5e-5,
                    "rank": 0,
                }
            )
    return recs


@st.composite
def runs(draw):
    world = draw(st.integers(1, 4))
    n_steps = draw(st.integers(0, 30))
    grad_mode = draw(st.sampled_from(sorted(GRAD_MODES)))
    loss_mode = draw(st.sampled_from(sorted(LOSS_MODES)))
    per_rank = {}
    for r in range(world):
        kind = draw(st.sampled_from(["full", "full", "nothing", "absent"]))
        if kind == "absent" and r > 0:
            continue
        per_rank[r] = [] if kind == "nothing" else draw(rank_records(n_steps, grad_mode, loss_mode))
    return run_from_records(per_rank, world, ended=draw(st.booleans()))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(runs())
def test_diagnose_run_is_total_and_consistent(run):
    diag = diagnose_run(run)
    crashed = [p for p in run.problems if "could not run on this data" in p or "could not be computed" in p]
    assert not crashed, crashed
    by_id = {f.id: f for f in diag.findings}
    assert set(FINDINGS) <= set(by_id)
    assert {h.id for h in diag.hypotheses} == set(HYPOTHESES)
    for winner, loser, _ in PRECEDENCE:
        assert not (by_id[winner].status == "confirmed" and by_id[loser].status == "confirmed")
    for f in diag.findings:
        assert f.status in ("confirmed", "ruled-out", "not-measured", "inconclusive", "observed")
        if f.status in ("not-measured", "inconclusive"):
            assert f.summary.strip(), f.id
    render_text(diag, "en")
    render_json(diag, "zh")
