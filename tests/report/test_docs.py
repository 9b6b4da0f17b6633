"""The user-facing catalog page and the threshold page name every ID the code can emit."""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_catalog_page_documents_every_finding_and_hypothesis_in_both_languages():
    text = (DOCS / "catalog.md").read_text(encoding="utf-8")
    for fid in FINDINGS:
        assert f"### `{fid}`" in text
    for hid in HYPOTHESES:
        assert f"| `{hid}` |" in text
    assert text.count("**Threshold**") == text.count("**阈值**") == len(FINDINGS)


def test_report_page_gives_a_threshold_for_every_runtime_finding():
    text = (DOCS / "report.md").read_text(encoding="utf-8")
    for fid, spec in FINDINGS.items():
        if spec.runtime:
            assert fid in text, fid
