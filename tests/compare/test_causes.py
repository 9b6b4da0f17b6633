"""Compare causes are specs (compare/causes.py): catalog hypotheses, one table, ranked by score."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.compare.analysis import RunSummary, compare
from ddp_doctor.compare.causes import (
    CAUSES,
    SERIOUS_SCORE,
    SETTING_FACTOR,
    CauseSpec,
    Pair,
    setting_differs,
    setting_factor,
)
from ddp_doctor.core.catalog import HYPOTHESES, Text


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


def _pair(a: dict[str, object], b: dict[str, object]) -> Pair:
    """A Pair of two stand-in run summaries holding only the attributes a setting cause reads."""
    summary = cast("Callable[..., RunSummary]", SimpleNamespace)
    return Pair(summary(**a), summary(**b), "samples", None, {}, None, 0)


def test_a_setting_cause_is_one_spec_over_the_helpers() -> None:
    spec = next(s for s in CAUSES if s.key == "compile")
    assert spec.find(_pair({"compiled": None}, {"compiled": None}), spec) == []
    (cause,) = spec.find(_pair({"compiled": None}, {"compiled": "inductor"}), spec)
    assert cause.summary.en == "torch.compile differs: A off, B inductor" and "A 关" in cause.summary.zh
    assert cause.evidence == {"a": None, "b": "inductor"} and cause.score == spec.score
    peak = setting_factor("lr_peak", Text("{a:g} vs {b:g} ({f:g}×)", "{a:g} 与 {b:g}"))
    ratio = CauseSpec("lr", "lr-schedule", 1, "", peak)
    assert peak(_pair({"lr_peak": 1e-3}, {"lr_peak": 1.4e-3}), ratio) == []  # below SETTING_FACTOR
    (big,) = peak(_pair({"lr_peak": 1e-3}, {"lr_peak": 2e-3}), ratio)
    assert big.summary.en == "0.001 vs 0.002 (2×)" and big.evidence["threshold"] == SETTING_FACTOR
    same = setting_differs("precision", Text("{a} {b}", "{a} {b}"))
    assert same(_pair({"precision": "bf16"}, {"precision": "bf16"}), ratio) == []
