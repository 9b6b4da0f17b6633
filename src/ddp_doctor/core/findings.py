"""The one result type: a `Finding`, and a hypothesis `Verdict` built from findings.

Runtime checks, lint rules and experiments all return `Finding` objects; renderers only ever
see these. The JSON shape is the public contract of ../docs/catalog.md (schema versions below).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ddp_doctor.core.catalog import FINDINGS, Lang, Severity, Text, finding

REPORT_SCHEMA = "ddp-doctor.report/1"
LINT_SCHEMA = "ddp-doctor.lint/1"

# "observed": a fact the run shows (settings as set) that is not a diagnosis; never a problem.
Status = Literal["confirmed", "ruled-out", "not-measured", "inconclusive", "observed"]
Verdict = Literal["confirmed", "ruled-out", "inconclusive", "not-measured"]
STATUSES: tuple[str, ...] = ("confirmed", "ruled-out", "not-measured", "inconclusive", "observed")
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass
class Finding:
    """One measured (or statically found) fact about a run or a script.

    ``summary`` states the result with its numbers, in both languages (a :class:`Text`; a plain
    string is taken as English, its Chinese falling back to the catalog's meaning); ``fix`` likewise
    (default: the catalog's). ``evidence`` holds those numbers (and the threshold used, under the
    key ``threshold`` where one applies). ``path``/``line`` locate lint
    findings; runtime findings leave them unset. ``coverage`` says what a runtime check covered
    (optimizer steps covered of the run, and on which basis); it is set on every runtime "ruled
    out" (analysis/make.py, analysis/diagnose.py).
    """

    id: str
    status: Status
    severity: Severity
    summary: Text
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: Text = Text("")  # "": the catalog's fix
    path: str | None = None
    line: int | None = None
    source: Literal["runtime", "lint", "experiment"] = "runtime"
    coverage: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        spec = finding(self.id)  # raises on unknown IDs: the catalog is the single source of IDs
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.severity not in SEVERITY_ORDER:
            raise ValueError(f"severity must be one of {tuple(SEVERITY_ORDER)}, got {self.severity!r}")
        if not isinstance(self.summary, Text):
            self.summary = Text(str(self.summary), spec.meaning.zh)
        if not isinstance(self.fix, Text) or not self.fix:
            # a plain string: the catalog's fix when it is empty or its English, else English only
            self.fix = spec.fix if self.fix in ("", spec.fix.en) else Text(self.fix)

    def summary_in(self, lang: Lang) -> str:
        return self.summary.get(lang)

    def fix_in(self, lang: Lang) -> str:
        return self.fix.get(lang)

    def to_report_json(self, lang: Lang = "en") -> dict[str, Any]:
        """The report's F object; in Chinese the English summary stays under ``summary_en``."""
        out: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "severity": self.severity,
            "summary": self.summary.get(lang),
            "evidence": jsonable(self.evidence),
            "fix": self.fix_in(lang),
        }
        if lang == "zh":
            out["summary_en"] = self.summary.en
        else:
            out["summary_zh"] = self.summary.zh
        if self.coverage is not None:
            out["coverage"] = jsonable(text_fields(self.coverage, "basis"))
        return out

    def to_lint_json(self, lang: Lang = "en") -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "line": self.line,
            "severity": self.severity,
            "message": self.summary.get(lang),
            "fix": self.fix_in(lang),
        }


@dataclass
class HypothesisVerdict:
    """The answer to one hypothesis: a verdict and the findings behind it."""

    id: str
    verdict: Verdict
    findings: list[str]
    summary: Text

    def to_json(self, lang: Lang = "en") -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "verdict": self.verdict,
            "findings": list(self.findings),
            "summary": self.summary.get(lang),
        }
        if lang == "zh":
            out["summary_en"] = self.summary.en
        return out


def text_fields(d: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """``d`` as JSON writes it: each of ``keys`` that holds a :class:`Text` becomes ``key`` (English)
    followed by ``key_zh`` (the public JSON's bilingual fields; in memory there is one Text)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k in keys and isinstance(v, Text):
            out[k], out[f"{k}_zh"] = v.en, v.get("zh")
        else:
            out[k] = v
    return out


def jsonable(value: Any) -> Any:
    """Make evidence JSON-safe: NaN/Inf become strings, tuples lists, numpy scalars floats."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return jsonable(value.item())
    return value


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Confirmed first, then by severity, then by catalog order."""
    order = {fid: i for i, fid in enumerate(FINDINGS)}
    return sorted(
        findings,
        key=lambda f: (
            f.status != "confirmed",
            SEVERITY_ORDER[f.severity],
            order[f.id],
            f.path or "",
            f.line or 0,
        ),
    )
