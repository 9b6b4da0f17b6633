"""The catalog matches the public contract in ../shared/catalog.md and is complete in both languages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddp_doctor.catalog import FINDINGS, HYPOTHESES, LANGS, lint_ids, runtime_ids
from ddp_doctor.findings import Finding

SHARED_CATALOG = Path(__file__).resolve().parents[1].parent / "shared" / "catalog.md"


def _contract_rows() -> tuple[dict[str, str], dict[str, list[str]]]:
    text = SHARED_CATALOG.read_text(encoding="utf-8")
    findings: dict[str, str] = {}
    hypotheses: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            hypotheses[cells[0].strip("`")] = [f.strip() for f in cells[2].split("(")[0].split(",")]
        elif len(cells) == 4 and re.fullmatch(r"[RL ]+", cells[1] or "-"):
            findings[cells[0]] = cells[1]
    return findings, hypotheses


@pytest.mark.skipif(not SHARED_CATALOG.exists(), reason="../shared/catalog.md not beside the checkout")
def test_catalog_ids_and_kinds_match_shared_contract() -> None:
    # The contract: keep every ID and field; adding is fine (new IDs, new findings under a hypothesis).
    findings, hypotheses = _contract_rows()
    assert set(findings) <= set(FINDINGS)
    for fid, kinds in findings.items():
        assert FINDINGS[fid].runtime == ("R" in kinds), fid
        assert FINDINGS[fid].lint == ("L" in kinds), fid
    assert set(hypotheses) <= set(HYPOTHESES)
    for hid, fids in hypotheses.items():
        assert list(HYPOTHESES[hid].findings)[: len(fids)] == fids, hid


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
