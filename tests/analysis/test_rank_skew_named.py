"""rank-data-skew names the rank the per-rank means single out (issue 25 item f).

A 4-rank run whose rank 3 runs at 4× the others' loss: every other rank's difference from the
rest is shifted by a third of rank 3's, with less noise, so the largest |t| was rank 0's.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("world", "outlier", "factor"), [(4, 3, 4.0), (4, 0, 4.0), (3, 1, 2.0), (4, 2, 0.25)]
)
def test_the_named_rank_is_the_one_whose_mean_stands_out(diag_of, world, outlier, factor):
    diag = diag_of(world_size=world, extra={"skew_rank": outlier, "skew_factor": factor})
    f = next(f for f in diag.findings if f.id == "rank-data-skew")
    assert f.status == "confirmed", f.summary
    means = f.evidence["tests"]["local loss"]["per_rank_mean"]
    others = [v for r, v in means.items() if int(r) != outlier]
    assert means[str(outlier)] == pytest.approx(factor * sum(others) / len(others), rel=0.1)
    assert f.evidence["tests"]["local loss"]["worst_rank"] == outlier
    assert f.summary.startswith(f"Rank {outlier}'s local loss"), f.summary


def test_a_clean_four_rank_run_names_no_rank(diag_of):
    f = next(f for f in diag_of(world_size=4).findings if f.id == "rank-data-skew")
    assert f.status == "ruled-out", f.summary
