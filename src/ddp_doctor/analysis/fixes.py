"""Fixes that take the run's other confirmed findings into account.

A finding's catalog fix is written for the finding alone. When another finding confirmed in the
same run is a known *cause* of it, the generic fix points away from the cause (e.g. "seed every
rank identically" for replicas that diverge because the sync flag was toggled after the
forward). An effect's spec lists its causes (``caused_by``) in order of how directly they produce
it; the fix of a confirmed effect then names the confirmed causes first, with their fixes.

A catalog fix can also assume a setup the run does not have ("call the DDP wrapper" where there is
none): :func:`_setup_fix` gives the fix that fits what the evidence shows, before the chaining.
"""

from __future__ import annotations

from ddp_doctor.core.catalog import FINDINGS, Text
from ddp_doctor.core.findings import Finding

# Catalog fixes written for one setup, and the fix for the other setups the evidence shows.
# ddp-bypassed's catalog fix ("call `ddp_model(x)`") assumes a DDP wrapper exists: a script with
# no wrapper (nanochat averages gradients in its own distributed optimizer) needs another fix.
NO_DDP_WRAPPER_FIX = Text(
    "No DistributedDataParallel wrapper was seen in this run: gradients are not averaged across ranks "
    "unless your code does it. Wrap the model (`model = DDP(model)`) and call the wrapper for the forward, "
    "or average every gradient yourself before `optimizer.step()` on every rank "
    "(`dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)` for each parameter).",
    "本次运行中没有看到 DistributedDataParallel 包装器：除非你的代码自己处理，梯度不会在各 rank 之间平均。"
    "用 `model = DDP(model)` 包装模型并在前向时调用包装器，或在每个 rank 的 `optimizer.step()` 之前自行平均每个梯度"
    "（对每个参数执行 `dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)`）。",
)


def _setup_fix(f: Finding) -> Text | None:
    """The fix that fits the script's setup, when the catalog's does not (see the table above)."""
    if f.id == "ddp-bypassed" and f.evidence.get("ddp_wrapped") is False:
        return NO_DDP_WRAPPER_FIX
    return None


def refine_fixes(findings: list[Finding]) -> list[Finding]:
    """Fit each confirmed finding's fix to the setup, then prefix the fix of each confirmed effect
    with its confirmed causes' fixes (in place)."""
    confirmed = {f.id: f for f in findings if f.status == "confirmed"}
    for each in confirmed.values():
        fitted = _setup_fix(each)
        if fitted is not None:
            each.fix = fitted
    # a cause contributes its own (fitted) fix, never one chained here: the result does not depend
    # on the order the effects are visited in, and no cause is named twice in one fix
    own_fix = {fid: f.fix for fid, f in confirmed.items()}
    for effect, f in confirmed.items():
        found = [c for c in FINDINGS[effect].caused_by if c in confirmed and c != effect]
        if not found:
            continue
        lead = " ".join(
            f"Confirmed in this run and a cause of this: {c} — {own_fix[c].en.rstrip('.')}." for c in found
        )
        lead_zh = "".join(f"本次运行已确认、且是其原因：{c} — {own_fix[c].get('zh')}" for c in found)
        own = _setup_fix(f) or FINDINGS[effect].fix
        f.fix = Text(f"{lead} Then: {own.en}", f"{lead_zh} 然后：{own.get('zh')}")
        f.evidence.setdefault("explained_by", found)
    return findings
