"""Golden messages: every rule's finding text (English and Chinese), severity and fix, on each bad
snippet of its corpus folder, exactly as committed in golden/messages.json.

A message is the user interface of a finding; this catches a rule edit that garbles a message, a
lost translation or a changed fix. After an intended change, regenerate and review the diff:

    python -m pytest tests/lint/test_golden_messages.py --update-golden   # or DDP_DOCTOR_UPDATE_GOLDEN=1

(the one golden-file mechanism, tests/fixtures/golden.py; runtime findings: tests/report/test_golden_findings.py)
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.golden import check_golden

from ddp_doctor.core.catalog import FINDINGS, lint_ids
from ddp_doctor.lint.engine import lint_file

CORPUS = Path(__file__).parent / "corpus"
GOLDEN = Path(__file__).parent / "golden" / "messages.json"


def _messages() -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for rule in lint_ids():
        for path in sorted((CORPUS / rule).glob("bad_*.py")):
            found = [f for f in lint_file(path).findings if f.id == rule]
            out[f"{rule}/{path.name}"] = [
                {
                    "line": f.line,
                    "severity": f.severity,
                    "gated_by": f.evidence.get("gated_by"),
                    "message": f.summary.en,
                    "message_zh": f.summary.zh,
                    "fix": FINDINGS[rule].fix.en,
                    "fix_zh": FINDINGS[rule].fix.zh,
                    "autofix": f.evidence.get("autofix", False),
                }
                for f in sorted(found, key=lambda f: f.line or 0)
            ]
    return out


def test_every_rule_message_matches_the_golden_file(update_golden: bool) -> None:
    check_golden(GOLDEN, _messages(), update_golden)


def test_every_rule_has_a_golden_message_in_both_languages() -> None:
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for rule in lint_ids():
        entries = [e for k, v in want.items() if k.startswith(f"{rule}/") for e in v]
        assert entries, rule
        assert all(e["message"] and e["message_zh"] and e["fix"] and e["fix_zh"] for e in entries), rule
