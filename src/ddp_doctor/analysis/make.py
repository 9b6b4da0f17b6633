"""Small constructors for findings, so every check states status, numbers and threshold the same way.

Severity: the catalog severity when confirmed; ``info`` for ruled-out / not-measured /
inconclusive / observed, so that a script filtering on ``severity == "error"`` sees only real problems.

Coverage: a "ruled out" states what it covered (the ``coverage`` field, see :func:`coverage`). A
check that covered less than :data:`MIN_COVERAGE` of the run's optimizer steps is not allowed to
rule anything out: :func:`ruled_out` turns it into ``inconclusive`` and says why.
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.core.catalog import FINDINGS, Text
from ddp_doctor.core.findings import Finding


def confirmed(fid: str, summary: Text, **evidence: Any) -> Finding:
    return Finding(fid, "confirmed", FINDINGS[fid].severity, summary, evidence)


# Share of the run's optimizer steps a check must cover to rule a finding out (ddp-doctor's choice:
# a problem confined to the uncovered quarter would still be missed, so below this it is inconclusive).
MIN_COVERAGE = 0.75


def coverage(covered: int, total: int, basis: Text) -> dict[str, Any]:
    """What a check looked at: ``covered`` of ``total`` optimizer steps, and on which basis (the
    report's JSON writes ``basis`` in English and ``basis_zh``: ``Finding.to_report_json``)."""
    total = max(int(total), 0)
    covered = max(0, min(int(covered), total))
    return {
        "steps_covered": covered,
        "steps_total": total,
        "fraction": covered / total if total else 0.0,
        "basis": basis,
    }


def coverage_text(cov: dict[str, Any], lang: str = "en") -> str:
    n, of = cov.get("steps_covered"), cov.get("steps_total")
    basis = cov["basis"].get("zh" if lang == "zh" else "en")
    if lang == "zh":
        return f"覆盖 {of} 个优化步中的 {n} 个" + (f"（{basis}）" if basis else "")
    return f"over {n} of {of} optimizer steps" + (f" ({basis})" if basis else "")


def with_coverage(f: Finding, cov: dict[str, Any]) -> Finding:
    """Attach what a "ruled out" covered to ``f`` (and say it); too little makes it inconclusive."""
    f.coverage = cov
    if f.status != "ruled-out":
        return f
    tail_en, tail_zh = coverage_text(cov), coverage_text(cov, "zh")
    if cov["fraction"] < MIN_COVERAGE:
        f.status = "inconclusive"
        tail_en += f" — less than {MIN_COVERAGE:.0%} of the run, so inconclusive, not ruled out"
        tail_zh += f" — 不足运行的 {MIN_COVERAGE:.0%}，因此无定论而非排除"
    f.summary = Text(
        f"{f.summary.en.rstrip('.')}; {tail_en}.", f"{f.summary.get('zh').rstrip('。')}；{tail_zh}。"
    )
    return f


def ruled_out(fid: str, summary: Text, coverage: Any = None, **evidence: Any) -> Finding:
    """``coverage``: a :func:`coverage` dict (typed ``Any`` so evidence dicts can be splatted beside it)."""
    f = Finding(fid, "ruled-out", "info", summary, evidence)
    return f if coverage is None else with_coverage(f, coverage)


def observed(fid: str, summary: Text, **evidence: Any) -> Finding:
    """A fact the run shows that is not a diagnosis (e.g. DDP bucket settings): never a problem."""
    return Finding(fid, "observed", "info", summary, evidence)


def not_measured(fid: str, summary: Text, **evidence: Any) -> Finding:
    return Finding(fid, "not-measured", "info", summary, evidence)


def inconclusive(fid: str, summary: Text, **evidence: Any) -> Finding:
    return Finding(fid, "inconclusive", "info", summary, evidence)


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for a sentence: 3 significant digits, 'n/a' for None."""
    if x is None:
        return "n/a"
    return f"{x:.{digits}g}"
