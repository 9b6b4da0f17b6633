"""The real-script corpus's CI subset: scripts written for this repository in the style of the
public corpus rows (tests/realscripts/scripts), run bare and under `ddp-doctor run` with 2 gloo
ranks by tests/realscripts/harness.py and scored by its `score` against the expectations written next
to each (its FIXTURES; `python bench/real_scripts.py` runs the whole corpus). The public rows need git mirrors and run by hand
(docs/real-scripts.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import teardown_race

from tests.realscripts import harness as runner

ROOT = Path(__file__).resolve().parents[2]

FIXTURES = {s.id: s for s in runner.FIXTURES}


def _args(out: Path) -> argparse.Namespace:
    return argparse.Namespace(
        out=out, mirrors=None, cache=None, bare_only=False, vision_python=None, text_report=False
    )


def test_every_corpus_row_names_a_pinned_source_and_catalog_expectations():
    from ddp_doctor.core.catalog import FINDINGS

    rows = runner.SCRIPTS + runner.FIXTURES
    assert len(runner.SCRIPTS) >= 12
    assert len({s.id for s in rows}) == len(rows)
    for s in rows:
        if s.repo != runner.LOCAL:
            assert len(s.commit) == 40, s.id
        for e in s.expect:
            assert e.verdict in ("confirmed", "absent", "either"), s.id
            assert e.why, s.id
            if e.finding != "not-learning":
                assert e.finding in FINDINGS, f"{s.id}: {e.finding} is no catalog finding"


def test_a_missing_mirror_makes_a_row_not_available(tmp_path):
    script = runner.SCRIPTS[0]
    result = runner.run_one(script, _args(tmp_path))
    assert not result.available
    assert "no mirror" in result.why_unavailable
    assert "not available" in runner.markdown([result])


def test_score_counts_hits_misses_unmeasured_and_false_alarms():
    script = FIXTURES["fixture-gpt-accum-rank0-print"]
    result = runner.Result(script.id, available=True)
    runner.score(
        script,
        {
            "rank0-only-loss-log": "not-measured",
            "accum-no-sync-missing": "confirmed",
            "loss-spike": "ruled-out",
        },
        result,
    )
    assert result.not_measured == ["rank0-only-loss-log (not-measured)"]
    assert result.false_alarms == ["accum-no-sync-missing"]
    assert result.misses == [] and result.hits == []
    result = runner.Result(script.id, available=True)
    runner.score(script, {"rank0-only-loss-log": "ruled-out"}, result)
    assert result.misses == ["rank0-only-loss-log (ruled-out)"]
    result = runner.Result(script.id, available=True)
    findings = {"rank0-only-loss-log": "confirmed", "oscillation-within-noise": "confirmed"}
    runner.score(script, findings, result, {"oscillation-within-noise": "info"})
    assert result.hits == ["rank0-only-loss-log"]
    assert result.observations == ["oscillation-within-noise"] and result.false_alarms == []


@pytest.mark.distributed
@pytest.mark.parametrize("fixture_id", sorted(FIXTURES))
def test_fixture_bare_and_probed(fixture_id, tmp_path):
    script = FIXTURES[fixture_id]
    result = runner.run_one(script, _args(tmp_path / "try-0"))
    # The bare run has no run directory to prove it completed: a bare rank's teardown abort is retried
    # (tests/teardown_race.py policy), at most RETRIES times, with fresh output folders.
    for attempt in range(1, teardown_race.RETRIES + 1):
        if result.bare is None or result.bare.code == 0:
            break
        if teardown_race.TEARDOWN_MESSAGE not in result.bare.stderr_tail:
            break
        teardown_race.EVENTS.append(f"retried: bare {fixture_id}")
        result = runner.run_one(script, _args(tmp_path / f"try-{attempt}"))
    assert result.available, result.why_unavailable
    assert result.bare is not None and result.probed is not None
    assert result.bare.code == 0, result.bare.stderr_tail
    # the known gloo teardown abort is tolerated only after a complete run (tests/teardown_race.py)
    if result.probed.code != 0:
        assert "terminate called without an active exception" in result.probed.stderr_tail, (
            result.probed.stderr_tail
        )
        assert result.ranks_present == result.world_size
    assert not result.report_crash, result.report_crash
    assert result.probe_errors == []
    assert result.ranks_present == 2
    assert result.false_alarms == [], result.findings
    assert result.misses == [], result.findings
    confirmed = [e.finding for e in script.expect if e.verdict == "confirmed"]
    assert result.hits == confirmed, (result.not_measured, result.findings)


def test_docs_show_the_current_expectations():
    """docs/real-scripts.md holds the table `--expectations` prints (regenerate it on a change)."""
    doc = (ROOT / "docs" / "real-scripts.md").read_text()
    assert runner.expectations(runner.SCRIPTS + runner.FIXTURES) in doc
