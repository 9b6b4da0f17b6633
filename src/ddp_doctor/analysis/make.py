"""Small constructors for findings, so every check states status, numbers and threshold the same way.

Severity: the catalog severity when confirmed; ``info`` for ruled-out / not-measured /
inconclusive, so that a script filtering on ``severity == "error"`` sees only real problems.
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.catalog import FINDINGS
from ddp_doctor.findings import Finding


def confirmed(fid: str, en: str, zh: str, **evidence: Any) -> Finding:
    return Finding(
        id=fid,
        status="confirmed",
        severity=FINDINGS[fid].severity,
        summary=en,
        summary_zh=zh,
        evidence=evidence,
    )


def ruled_out(fid: str, en: str, zh: str, **evidence: Any) -> Finding:
    return Finding(id=fid, status="ruled-out", severity="info", summary=en, summary_zh=zh, evidence=evidence)


def not_measured(fid: str, en: str, zh: str, **evidence: Any) -> Finding:
    return Finding(
        id=fid, status="not-measured", severity="info", summary=en, summary_zh=zh, evidence=evidence
    )


def inconclusive(fid: str, en: str, zh: str, **evidence: Any) -> Finding:
    return Finding(
        id=fid, status="inconclusive", severity="info", summary=en, summary_zh=zh, evidence=evidence
    )


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for a sentence: 3 significant digits, 'n/a' for None."""
    if x is None:
        return "n/a"
    return f"{x:.{digits}g}"
