"""The generated docs (catalog, thresholds, interventions, causes, lint rules) match the code: edit the code, then run
`python -m ddp_doctor.gendocs --write`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddp_doctor import gendocs

ROOT = Path(__file__).resolve().parents[1]


def test_committed_generated_docs_are_current() -> None:
    assert gendocs.stale(ROOT) == [], "run `python -m ddp_doctor.gendocs --write`"


def test_a_stale_section_is_detected_and_rewritten(tmp_path: Path) -> None:
    for rel in gendocs.GENERATED:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((ROOT / rel).read_text(encoding="utf-8"), encoding="utf-8")
    report = tmp_path / "docs/report.md"
    report.write_text(report.read_text(encoding="utf-8").replace("| sampler-missing |", "| sampler-gone |"))
    assert gendocs.stale(tmp_path) == ["docs/report.md"]
    assert gendocs.write(tmp_path) == ["docs/report.md"]
    assert gendocs.stale(tmp_path) == []


def test_missing_markers_are_reported_not_silently_ignored() -> None:
    with pytest.raises(ValueError, match="markers"):
        gendocs.render("no markers here", "thresholds", "x")


def test_every_lint_rule_has_a_row_in_the_generated_rule_table() -> None:
    from ddp_doctor.lint.rules import ALL_RULES

    page = (ROOT / "docs/lint.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert rule.flagged and rule.not_flagged, rule.id
        assert f"| {rule.id} | {rule.spec.severity} | {rule.flagged} |" in page, rule.id
    assert f"linted with all {len(ALL_RULES)}\nrules" in page
