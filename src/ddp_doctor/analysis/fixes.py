"""Fixes that take the run's other confirmed findings into account.

A finding's catalog fix is written for the finding alone. When another finding confirmed in the
same run is a known *cause* of it, the generic fix points away from the cause (e.g. "seed every
rank identically" for replicas that diverge because the sync flag was toggled after the
forward). :data:`CAUSES` lists, per effect, its causes in order of how directly they produce it;
the fix of a confirmed effect then names the confirmed causes first, with their fixes.
"""

from __future__ import annotations

from ddp_doctor.core.catalog import FINDINGS, Text
from ddp_doctor.core.findings import Finding

# effect → causes (why: the mechanism, one line each)
CAUSES: dict[str, tuple[str, ...]] = {
    # an unsynced last micro-step leaves each rank with its own gradient: the replicas step apart
    "replica-divergence": ("no-sync-after-forward", "ddp-bypassed", "fsdp-clip-wrong"),
    # a too-high lr makes the gradient norm and the loss jump
    "loss-spike": ("accum-loss-unscaled", "update-ratio-high", "warmup-short", "clip-before-unscale"),
    "grad-spike": ("accum-loss-unscaled", "update-ratio-high", "warmup-short"),
    "loss-unstable": (
        "replica-divergence",
        "no-sync-after-forward",
        "accum-loss-unscaled",
        "update-ratio-high",
        "warmup-short",
        "scheduler-per-microstep",
        "clip-before-unscale",
        "fp16-overflow",
    ),
    "clip-saturated": ("accum-loss-unscaled", "clip-before-unscale", "update-ratio-high"),
    "update-ratio-high": ("accum-loss-unscaled", "scheduler-per-microstep", "warmup-short"),
}


def refine_fixes(findings: list[Finding]) -> list[Finding]:
    """Prefix the fix of each confirmed effect with its confirmed causes' fixes (in place)."""
    confirmed = {f.id: f for f in findings if f.status == "confirmed"}
    for effect, causes in CAUSES.items():
        f = confirmed.get(effect)
        if f is None:
            continue
        found = [c for c in causes if c in confirmed and c != effect]
        if not found:
            continue
        lead = " ".join(
            f"Confirmed in this run and a cause of this: {c} — {confirmed[c].fix.rstrip('.')}." for c in found
        )
        lead_zh = "".join(f"本次运行已确认、且是其原因：{c} — {confirmed[c].fix_in('zh')}" for c in found)
        f.fix = Text(f"{lead} Then: {FINDINGS[effect].fix.en}", f"{lead_zh} 然后：{FINDINGS[effect].fix.zh}")
        f.evidence.setdefault("explained_by", found)
    return findings
