"""Compare causes are specs (compare/causes.py): catalog hypotheses, one table, ranked by score."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.compare.analysis import compare
from ddp_doctor.compare.causes import CAUSES, SERIOUS_SCORE
from ddp_doctor.core.catalog import HYPOTHESES


def test_every_cause_names_a_catalog_hypothesis() -> None:
    keys = [s.key for s in CAUSES]
    assert len(keys) == len(set(keys))
    for spec in CAUSES:
        assert spec.key.startswith("finding:") or spec.hypothesis in HYPOTHESES, spec.key
    assert any(s.score < SERIOUS_SCORE for s in CAUSES) and any(s.score >= SERIOUS_SCORE for s in CAUSES)


def test_found_causes_carry_their_hypothesis_and_rank(make_run: Callable[..., Path]) -> None:
    a = diagnose(make_run(world_size=1, steps=120))
    b = diagnose(make_run(world_size=2, steps=120, faults=("sched-per-micro",)))
    causes = compare(a, b).causes
    assert [c.score for c in causes] == sorted((c.score for c in causes), reverse=True)
    keys = {c.key: c for c in causes}
    assert keys["scheduler-steps"].hypothesis == "lr-schedule"
    for c in causes:
        assert c.hypothesis in HYPOTHESES, c.key
        assert c.to_json()["hypothesis"] == c.hypothesis
