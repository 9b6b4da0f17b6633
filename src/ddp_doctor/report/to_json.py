"""The report as JSON: ``{"schema": "ddp-doctor.report/1", "run", "findings", "hypotheses"}``.

Stable: field names are the public contract of the catalog. With ``lang="zh"`` the summaries are
the Chinese ones (the English text stays available under ``summary_en``).
"""

from __future__ import annotations

import json
from typing import Any

from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.catalog import Lang
from ddp_doctor.findings import REPORT_SCHEMA, jsonable


def report_dict(diag: Diagnosis, lang: Lang = "en") -> dict[str, Any]:
    findings = []
    for f in diag.findings:
        d = f.to_report_json()
        if lang == "zh":
            d["summary_en"], d["summary"], d["fix"] = d["summary"], f.summary_in("zh"), f.fix_in("zh")
        findings.append(d)
    hyps = []
    for h in diag.hypotheses:
        d = h.to_json()
        if lang == "zh" and h.summary_zh:
            d["summary_en"], d["summary"] = d["summary"], h.summary_zh
        d.pop("summary_zh", None)
        hyps.append(d)
    return {
        "schema": REPORT_SCHEMA,
        "lang": lang,
        "run": jsonable(diag.run_info),
        "findings": findings,
        "hypotheses": hyps,
    }


def render_json(diag: Diagnosis, lang: Lang = "en") -> str:
    return json.dumps(report_dict(diag, lang), ensure_ascii=False, indent=1, allow_nan=False)
