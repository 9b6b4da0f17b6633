"""Render a lint result as text, JSON (schema ``ddp-doctor.lint/1``) or SARIF 2.1.0."""

from __future__ import annotations

import json
from typing import Any

from ddp_doctor import __version__
from ddp_doctor.core.catalog import FINDINGS, UI, Lang
from ddp_doctor.core.findings import LINT_SCHEMA, Finding, sort_findings
from ddp_doctor.core.terminal import safe, safe_json
from ddp_doctor.lint.engine import LintResult

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _where(f: Finding) -> str:
    cell = f.evidence.get("cell")
    return f"{f.path}:cell {cell}:{f.line}" if cell else f"{f.path}:{f.line}"


def to_text(result: LintResult, lang: Lang = "en") -> str:
    out: list[str] = []
    for f in sort_findings(result.findings):
        gate = f.evidence.get("gated_by")
        tag = f" (config-gated: {gate})" if gate else ""
        out.append(f"{_where(f)}: {UI[f.severity].get(lang)} [{f.id}]{tag} {f.summary_in(lang)}")
        out.append(f"    {UI['fix'].get(lang)}: {f.fix_in(lang)}")
    for d in result.diagnostics:
        out.append(f"{d.path}{f':{d.line}' if d.line else ''}: {d.kind}: {d.message}")
    counts = {s: sum(f.severity == s for f in result.findings) for s in ("error", "warning", "info")}
    summary = ", ".join(f"{n} {UI[s].get(lang)}" for s, n in counts.items())
    fixed = f", fixed {result.fixed}" if result.fixed else ""
    out.append(f"{result.files} file(s): {summary}{fixed}; {len(result.diagnostics)} file problem(s)")
    return safe("\n".join(out))  # paths and names come from the user's files


def _finding_json(f: Finding, lang: Lang) -> dict[str, Any]:
    data = f.to_lint_json(lang)
    if "cell" in f.evidence:
        data["cell"] = f.evidence["cell"]
    if f.evidence.get("gated_by"):
        data["gated_by"] = f.evidence["gated_by"]
        data["tags"] = ["config-gated"]
    return data


def to_json(result: LintResult, lang: Lang = "en") -> str:
    return safe_json(
        json.dumps(
            {
                "schema": LINT_SCHEMA,
                "findings": [_finding_json(f, lang) for f in sort_findings(result.findings)],
                "diagnostics": [d.to_json() for d in result.diagnostics],
                "files": result.files,
            },
            ensure_ascii=False,
            indent=2,
        )
    )


def _sarif_properties(f: Finding) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if "cell" in f.evidence:
        props["cell"] = f.evidence["cell"]
    if f.evidence.get("gated_by"):
        props["gated_by"] = f.evidence["gated_by"]
        props["tags"] = ["config-gated"]
    return {"properties": props} if props else {}


def to_sarif(result: LintResult, lang: Lang = "en") -> str:
    ids = sorted({f.id for f in result.findings})
    rules = [
        {
            "id": i,
            "name": i,
            "shortDescription": {"text": FINDINGS[i].title.get(lang)},
            "fullDescription": {"text": FINDINGS[i].meaning.get(lang)},
            "help": {"text": FINDINGS[i].fix.get(lang)},
            "defaultConfiguration": {"level": SARIF_LEVEL[FINDINGS[i].severity]},
        }
        for i in ids
    ]
    results = [
        {
            "ruleId": f.id,
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.summary_in(lang)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": (f.path or "").replace("\\", "/")},
                        "region": {"startLine": f.line or 1},
                    }
                }
            ],
            **_sarif_properties(f),
        }
        for f in sort_findings(result.findings)
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{d.kind}: {d.message}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": d.path}}}],
        }
        for d in result.diagnostics
    ]
    run = {
        "tool": {"driver": {"name": "ddp-doctor", "version": __version__, "rules": rules}},
        "results": results,
        "invocations": [
            {"executionSuccessful": not result.diagnostics, "toolExecutionNotifications": notifications}
        ],
    }
    return safe_json(
        json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, ensure_ascii=False, indent=2)
    )


RENDERERS = {"text": to_text, "json": to_json, "sarif": to_sarif}
