"""Pairs of findings that cannot both stand, and which one wins.

Each check decides its own finding; two of them can read the same run in opposite directions
("this is not a bug" next to "training is unstable"). A report must not say both. When both
findings of a pair are confirmed, the winner stands and the loser becomes ``inconclusive``: its
summary says which finding overrode it and why, and its numbers stay in the evidence
(``overridden_by``). One table, applied once by diagnose.run_findings.
"""

from __future__ import annotations

from ddp_doctor.core.catalog import Text
from ddp_doctor.core.findings import Finding

# (winner, loser, why) — why: the mechanism that makes the loser's reading wrong when the winner holds
PRECEDENCE: tuple[tuple[str, str, Text], ...] = (
    (
        "loss-unstable",
        "oscillation-within-noise",
        Text(
            "a sustained excursion or divergence is not minibatch noise, even when the step-to-step "
            "std of the rest is within the band",
            "持续偏离或发散不是小批量噪声，即使其余部分的逐步标准差在噪声带内",
        ),
    ),
    (
        "training-not-progressing",
        "oscillation-within-noise",
        Text(
            "the model is not learning: a fluctuation within the noise band says nothing about a run "
            "that does not train",
            "模型没有在学习：对一个不训练的运行而言，波动在噪声带内说明不了什么",
        ),
    ),
)


def resolve(findings: list[Finding]) -> list[Finding]:
    """Apply :data:`PRECEDENCE` in place (a loser overridden once keeps its first reason)."""
    by_id = {f.id: f for f in findings}
    for winner, loser, why in PRECEDENCE:
        w, lo = by_id.get(winner), by_id.get(loser)
        if w is None or lo is None or w.status != "confirmed" or lo.status != "confirmed":
            continue
        lo.status = "inconclusive"
        lo.severity = "info"
        lo.evidence["overridden_by"] = winner
        lo.summary = Text(
            f"Overridden by {winner} (confirmed in this run): {why.en}. On its own this check read: "
            f"{lo.summary.en}",
            f"被 {winner}（本次运行已确认）覆盖：{why.get('zh')}。单独来看本检查的结论是：{lo.summary.get('zh')}",
        )
    return findings
