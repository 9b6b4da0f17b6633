"""The report as JSON: ``{"schema": "ddp-doctor.report/1", "run", "findings", "hypotheses"}``.

Stable: field names are the public contract of the catalog. With ``lang="zh"`` the summaries are
the Chinese ones (the English text stays available under ``summary_en``).
"""

from __future__ import annotations

import json
from typing import Any

from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.core.catalog import Lang
from ddp_doctor.core.findings import REPORT_SCHEMA
from ddp_doctor.core.terminal import safe_json


def report_dict(diag: Diagnosis, lang: Lang = "en") -> dict[str, Any]:
    return {
        "schema": REPORT_SCHEMA,
        "lang": lang,
        "run": diag.run_json(),
        "findings": [f.to_report_json(lang) for f in diag.findings],
        "hypotheses": [h.to_json(lang) for h in diag.hypotheses],
    }


def render_json(diag: Diagnosis, lang: Lang = "en") -> str:
    return safe_json(json.dumps(report_dict(diag, lang), ensure_ascii=False, indent=1, allow_nan=False))
