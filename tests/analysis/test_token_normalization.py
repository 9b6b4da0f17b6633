"""Token normalisation across ranks and from the backward root alone (issue 25 items a, g)."""

from __future__ import annotations

import pytest


def _f(diag, fid):
    return next(f for f in diag.findings if f.id == fid)


def test_per_rank_divisor_is_named_and_said_to_be_the_ranks_own_count(diag_of):
    f = _f(diag_of(faults=("per-rank-token-mean",)), "loss-norm-per-rank-tokens")
    assert f.status == "confirmed", f.summary
    assert f.evidence["divides_by_own_count_within_rank"] is True
    assert f.summary.startswith("Each rank divides its loss by its own valid-token count")
    assert f.evidence["token_weight_p5"] < 1 < f.evidence["token_weight_p95"]


def test_per_micro_batch_mean_confirms_both_and_is_not_called_the_ranks_own_count(diag_of):
    diag = diag_of(faults=("per-microbatch-mean-loss",))
    assert _f(diag, "loss-normalization-variable-tokens").status == "confirmed"
    f = _f(diag, "loss-norm-per-rank-tokens")
    assert f.status == "confirmed" and f.evidence["divides_by_own_count_within_rank"] is False


@pytest.mark.parametrize(
    ("faults", "status"), [((), "ruled-out"), (("per-microbatch-mean-loss",), "confirmed")]
)
def test_hand_reduced_loss_is_measured_from_the_root_and_the_label_counts(diag_of, faults, status):
    """No loss-function value (reduction="none" reduced by hand): the root and the tokens decide,
    when the per-token loss varies less than the token counts (here CV ~0.04 against ~0.25)."""
    diag = diag_of(faults=faults, sigma_sample=0.2, extra={"no_loss_fn": True})
    f = _f(diag, "loss-normalization-variable-tokens")
    assert f.status == status, f.summary
    assert f.evidence["basis"] == "root"
    assert "backward root alone" in f.summary


def test_one_rank_cannot_measure_the_across_rank_divisor(diag_of):
    f = _f(diag_of(world_size=1, faults=("per-rank-token-mean",)), "loss-norm-per-rank-tokens")
    assert f.status == "not-measured"


def test_hand_reduced_loss_whose_per_token_loss_varies_like_the_counts_is_inconclusive(diag_of):
    """Per-token loss CV ~0.14 against token CV ~0.25: the root alone cannot tell the two apart."""
    f = _f(diag_of(extra={"no_loss_fn": True}), "loss-normalization-variable-tokens")
    assert f.status == "inconclusive", f.summary
