"""The catalog contains the public contract (tests/data/public_contract.json) and is complete in both
languages; thresholds are one definition shared by the docs and the checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddp_doctor.core.catalog import (
    FINDINGS,
    HYPOTHESES,
    LANGS,
    Text,
    limit,
    lint_ids,
    runtime_ids,
    threshold_text,
)
from ddp_doctor.core.findings import Finding

CONTRACT = json.loads((Path(__file__).parent / "data" / "public_contract.json").read_text(encoding="utf-8"))


def test_catalog_contains_every_public_finding_id_with_its_kinds() -> None:
    for fid, kinds in CONTRACT["findings"].items():
        assert fid in FINDINGS, f"public finding id {fid} missing from the catalog"
        # contains, not equals: a finding may gain a kind (rank0-only-loss-log is now also measured)
        assert FINDINGS[fid].runtime or "R" not in kinds, fid
        assert FINDINGS[fid].lint or "L" not in kinds, fid
        assert fid in CONTRACT["finding_meaning"] and fid in CONTRACT["finding_evidence"], fid


def test_catalog_contains_every_public_hypothesis_and_its_findings() -> None:
    for hid, fids in CONTRACT["hypotheses"].items():
        assert hid in HYPOTHESES, f"public hypothesis {hid} missing from the catalog"
        assert set(fids) <= set(HYPOTHESES[hid].findings), hid


def test_every_runtime_finding_states_its_threshold_in_both_languages() -> None:
    for spec in FINDINGS.values():
        if spec.runtime:
            assert spec.threshold is not None, spec.id
            assert spec.threshold.source, spec.id
            for lang in LANGS:
                assert threshold_text(spec.id, lang).strip(), (spec.id, lang)


def test_threshold_numbers_are_the_ones_the_checks_use() -> None:
    from ddp_doctor.analysis.checks import data_order, precision
    from ddp_doctor.analysis.quantities import spikes

    assert limit("sampler-missing", "share") == data_order.IDENTICAL_SHARE
    assert limit("fp16-overflow", "min_skips") == precision.MIN_SKIPS
    assert limit("loss-spike", "z") == spikes.SPIKE_Z
    assert "50%" in threshold_text("sampler-missing")
    with pytest.raises(KeyError):
        limit("sampler-missing", "no-such-value")


def test_text_is_its_english_string_and_keeps_the_translation() -> None:
    t = Text("loss rose", "损失上升")
    assert t == "loss rose" and "rose" in t and f"{t}" == "loss rose"
    assert t.get("zh") == "损失上升" and t.get("en") == "loss rose"
    assert Text("only english").get("zh") == "only english"
    both = Text("a: ", "甲：").joining([Text("x", "叉"), Text("y", "歪")], Text(", ", "、"))
    assert (both.en, both.zh) == ("a: x, y", "甲：叉、歪")
    import pickle

    assert pickle.loads(pickle.dumps(t)).zh == "损失上升"


def test_finding_takes_a_bilingual_summary_or_a_plain_english_one() -> None:
    f = Finding(id="nonfinite", status="confirmed", severity="error", summary=Text("NaN", "出现 NaN"))
    assert f.summary == "NaN" and f.summary_in("zh") == "出现 NaN"
    g = Finding(id="nonfinite", status="confirmed", severity="error", summary="NaN")
    assert g.summary_in("zh") == FINDINGS["nonfinite"].meaning.zh


def test_every_text_exists_in_every_language() -> None:
    for spec in FINDINGS.values():
        for lang in LANGS:
            for text in (spec.title, spec.meaning, spec.evidence, spec.fix):
                assert text.get(lang).strip(), (spec.id, lang)


def test_hypotheses_only_name_known_findings() -> None:
    for h in HYPOTHESES.values():
        assert set(h.findings) <= set(FINDINGS), h.id


def test_runtime_and_lint_ids_cover_the_catalog() -> None:
    assert set(runtime_ids()) | set(lint_ids()) == set(FINDINGS)


def test_accum_no_sync_missing_is_never_an_error() -> None:
    assert FINDINGS["accum-no-sync-missing"].severity in ("info", "warning")


def test_finding_rejects_unknown_ids_and_statuses() -> None:
    with pytest.raises(KeyError):
        Finding(id="no-such-finding", status="confirmed", severity="error", summary="x")
    with pytest.raises(ValueError):
        Finding(id="nonfinite", status="maybe", severity="error", summary="x")  # type: ignore[arg-type]


def test_finding_json_is_finite_and_carries_default_fix() -> None:
    f = Finding(
        id="nonfinite",
        status="confirmed",
        severity="error",
        summary="NaN at step 3",
        evidence={"value": float("nan"), "steps": (3, 4)},
    )
    data = f.to_report_json()
    assert data["evidence"] == {"value": "nan", "steps": [3, 4]}
    assert data["fix"] == FINDINGS["nonfinite"].fix.en
    assert f.fix_in("zh") == FINDINGS["nonfinite"].fix.zh
