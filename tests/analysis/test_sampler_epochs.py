"""set-epoch-missing read as the sampler really behaves (issue 22, deliverable 3): several samplers,
peeks, re-created iterators, set_epoch after the first iteration; the message never contradicts the
evidence it prints. Runs generated in memory (tests/fixtures/gen_run.py)."""

from __future__ import annotations

from fixtures.gen_run import config, run_from_records, sampler, step

from ddp_doctor.analysis.diagnose import diagnose_run

EPOCH = 10  # optimizer steps per epoch


def sampler_rec(t, epoch, order, sid, *, shuffle=True, prev=None):
    rec = sampler(t, epoch, order, sid=sid)
    rec["shuffle"] = shuffle
    if prev is not None:
        rec["prev_drawn"], rec["prev_steps"] = prev
    return rec


def run(events_per_rank, epochs: int, world: int = 2):
    """``events_per_rank(rank)`` gives the sampler records; steps fill each epoch."""
    out = {}
    for r in range(world):
        recs = [config("sampler", sampler=0, type="DistributedSampler", shuffle=True)]
        recs += events_per_rank(r)
        recs += [step(t, [2.0 - 0.01 * t]) for t in range(epochs * EPOCH)]
        out[r] = sorted(recs, key=lambda x: (x.get("step", 0), x["kind"] != "config", x["kind"] != "sampler"))
    return run_from_records(out, world)


def set_epoch(diag):
    return next(f for f in diag.findings if f.id == "set-epoch-missing")


def tutorial_peek(r, with_set_epoch=True, epochs=5):
    """ddp-tutorial-series: `next(iter(loader))` peeks one batch before `set_epoch(epoch)` in every epoch."""
    recs = []
    prev = None
    for e in range(epochs):
        t = e * EPOCH
        peek_epoch = max(e - 1, 0) if with_set_epoch else 0
        recs.append(sampler_rec(t, peek_epoch, 100 + peek_epoch if with_set_epoch else 100, 0, prev=prev))
        real = e if with_set_epoch else 0
        recs.append(sampler_rec(t, real, 100 + real if with_set_epoch else 100, 0, prev=(8, 0)))
        prev = (64, EPOCH)
    return recs


def test_peek_before_set_epoch_is_not_a_repeat():
    f = set_epoch(diagnose_run(run(tutorial_peek, 5)))
    assert f.status == "ruled-out", f.summary
    assert "peeks" in f.summary and "0–4" in f.summary
    assert f.evidence["judged"]["iterations_that_fed_no_step"] == 5


def test_peek_without_set_epoch_is_still_confirmed_and_says_not_called():
    f = set_epoch(diagnose_run(run(lambda r: tutorial_peek(r, with_set_epoch=False), 5)))
    assert f.status == "confirmed", f.summary
    assert "set_epoch is not called" in f.summary and "epoch value 0" in f.summary


def imagenet(r, with_set_epoch: bool, epochs=3):
    """imagenet/main.py: train sampler (0, shuffled) each epoch, then the val sampler (1, shuffle=False)."""
    recs = [config("sampler", sampler=1, type="DistributedSampler", shuffle=False)]
    for e in range(epochs):
        t = e * EPOCH
        ep = e if with_set_epoch else 0
        recs.append(sampler_rec(t, ep, 7 + ep, 0, prev=(64, EPOCH) if e else None))
        recs.append(sampler_rec(t + EPOCH, 0, 999, 1, shuffle=False, prev=(32, 0) if e else None))
    return recs


def test_val_sampler_without_shuffle_does_not_decide_for_the_train_sampler():
    f = set_epoch(diagnose_run(run(lambda r: imagenet(r, with_set_epoch=False), 3)))
    assert f.status == "confirmed", f.summary
    assert "sampler 0" in f.summary and "shuffle=False" not in f.summary
    assert f.evidence["other_samplers"][0]["shuffle"] is False


def test_imagenet_with_set_epoch_is_ruled_out_on_the_train_sampler():
    f = set_epoch(diagnose_run(run(lambda r: imagenet(r, with_set_epoch=True), 3)))
    assert f.status == "ruled-out", f.summary
    assert "sampler 0" in f.summary and "0–2" in f.summary


def test_set_epoch_after_the_first_iteration_repeats_one_epoch_only():
    """`set_epoch(epoch)` inside the loop: epoch 0 and 1 both run at epoch value 0, then 1, 2, 3."""

    def recs(r):
        vals = [0, 0, 1, 2, 3]
        return [
            sampler_rec(e * EPOCH, v, 50 + v, 0, prev=(64, EPOCH) if e else None) for e, v in enumerate(vals)
        ]

    f = set_epoch(diagnose_run(run(recs, 5)))
    assert f.status == "ruled-out", f.summary
    assert f.evidence["repeated_orders"] == 2 and f.evidence["pairs_at_the_same_epoch_value"] == 2
    assert "set_epoch called after the first iteration" in f.summary


def test_a_sampler_iterated_twice_per_epoch_is_by_design_and_said():
    """Two loaders on one sampler (or two passes per epoch): the order repeats at one epoch value."""

    def recs(r):
        vals = [0, 0, 1, 1, 2, 2]
        return [
            sampler_rec(e * EPOCH, v, 50 + v, 0, prev=(64, EPOCH) if e else None) for e, v in enumerate(vals)
        ]

    f = set_epoch(diagnose_run(run(recs, 6)))
    assert f.status == "ruled-out", f.summary
    assert "set_epoch is called" in f.summary and "more than once per epoch" in f.summary


def test_an_order_unchanged_across_epoch_values_is_confirmed_and_says_so():
    def recs(r):
        return [sampler_rec(e * EPOCH, e, 50, 0, prev=(64, EPOCH) if e else None) for e in range(4)]

    f = set_epoch(diagnose_run(run(recs, 4)))
    assert f.status == "confirmed", f.summary
    assert "set_epoch is called" in f.summary and "ignores its epoch" in f.summary


def test_epochs_of_one_batch():
    """One batch per epoch: each training iteration feeds one step (prev_steps 1), none is a peek."""

    def recs(r):
        return [sampler_rec(e, 0, 9, 0, prev=(8, 1) if e else None) for e in range(EPOCH)]

    f = set_epoch(diagnose_run(run(recs, 1)))
    assert f.status == "confirmed" and f.evidence["judged"]["iterations_that_fed_no_step"] == 0


def test_one_training_epoch_with_a_peek_is_not_measured():
    def recs(r):
        return [sampler_rec(0, 0, 5, 0), sampler_rec(0, 0, 5, 0, prev=(8, 0))]

    f = set_epoch(diagnose_run(run(recs, 1)))
    assert f.status == "not-measured" and "peeks" in f.summary


def test_records_of_an_older_probe_without_sampler_numbers():
    def recs(r):
        return [sampler(e * EPOCH, 0, 5) for e in range(3)]

    f = set_epoch(diagnose_run(run(recs, 3)))
    assert f.status == "confirmed" and "set_epoch is not called" in f.summary


def test_one_training_epoch_and_a_shuffled_val_sampler_iterated_often():
    """A one-epoch run evaluating every few steps with a val sampler left at shuffle=True: the val
    sampler fed no step (known), the train sampler's count is unknown (one iteration): train is judged."""

    def recs(r):
        out = [sampler_rec(0, 0, 5, 0)]
        out += [sampler_rec(t, 0, 77, 1, prev=(16, 0) if t > 3 else None) for t in (3, 6, 9)]
        return out

    f = set_epoch(diagnose_run(run(recs, 1)))
    assert f.evidence["judged"]["sampler"] == 0, f.evidence
    assert f.status == "not-measured"  # one training iteration: nothing to compare
