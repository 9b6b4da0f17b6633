"""Hypothesis `optimizer`: Adam epsilon / beta2 / optimizer-state start-up.

Both findings need level `full` (per-group norms and Adam state); thresholds and sources are in
:mod:`ddp_doctor.analysis.quantities.ratios` (update/param > 1e-2; share of v̂ < eps² > 0.25).
"""

from __future__ import annotations

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, fmt, not_measured, ruled_out
from ddp_doctor.analysis.quantities.ratios import ADAM_EPS_SHARE, UPDATE_RATIO_HIGH
from ddp_doctor.findings import Finding

ENABLE_FULL = "run with `ddp-doctor run --level full`"
ENABLE_FULL_ZH = "请使用 `ddp-doctor run --level full` 运行"


def check(ctx: Context) -> list[Finding]:
    return [_eps(ctx), update_ratio(ctx)]


def _eps(ctx: Context) -> Finding:
    fid = "adam-eps-dominated"
    opt = ctx.config("optimizer") or {}
    kind = str(opt.get("type", ""))
    if opt and "adam" not in kind.lower():
        return ruled_out(
            fid,
            f"The optimizer is {kind}, not an Adam variant.",
            f"优化器是 {kind}，不是 Adam 类。",
            optimizer=kind,
        )
    r = ctx.ratios
    if r is None or not r.adam_share:
        return not_measured(
            fid,
            f"Needs Adam state statistics: {ENABLE_FULL}.",
            f"需要 Adam 状态统计：{ENABLE_FULL_ZH}。",
            level=ctx.level,
            optimizer=kind or None,
        )
    bad = {g: v for g, v in r.adam_share.items() if v > ADAM_EPS_SHARE}
    ev = dict(
        share_v_below_eps2=r.adam_share,
        eps=r.adam_eps,
        records=r.records,
        threshold=f"median share > {ADAM_EPS_SHARE}",
    )
    if bad:
        g, v = max(bad.items(), key=lambda kv: kv[1])
        return confirmed(
            fid,
            f"In {g}, {v:.0%} of Adam's second-moment entries are below eps² "
            f"(eps = {r.adam_eps.get(g, float('nan')):g}): eps sets their step.",
            f"{g} 中 {v:.0%} 的 Adam 二阶矩元素小于 eps²（eps = {r.adam_eps.get(g, float('nan')):g}）："
            "这些元素的步长由 eps 决定。",
            groups=sorted(bad),
            **ev,
        )
    worst = max(r.adam_share.values())
    return ruled_out(
        fid,
        f"At most {worst:.1%} of Adam's second-moment entries are below eps².",
        f"Adam 二阶矩中小于 eps² 的比例至多为 {worst:.1%}。",
        **ev,
    )


def update_ratio(ctx: Context) -> Finding:
    fid, r = "update-ratio-high", ctx.ratios
    if r is None or not r.update_ratio:
        return not_measured(
            fid,
            f"Needs per-layer-group update norms: {ENABLE_FULL}.",
            f"需要按层组的更新范数：{ENABLE_FULL_ZH}。",
            level=ctx.level,
        )
    bad = {g: v for g, v in r.update_ratio.items() if v > UPDATE_RATIO_HIGH}
    ev = dict(
        median_ratio_per_group=r.update_ratio,
        max_ratio_per_group=r.update_ratio_max,
        records=r.records,
        threshold=f"median ‖update‖/‖param‖ > {UPDATE_RATIO_HIGH:g} (usual ≈ 1e-3, CS231n)",
    )
    if bad:
        names = ", ".join(f"{g} {fmt(v)}" for g, v in sorted(bad.items(), key=lambda kv: -kv[1]))
        return confirmed(
            fid,
            f"Update/parameter ratio far above ~1e-3 in: {names}.",
            f"以下层组的更新量/参数之比远高于约 1e-3：{names}。",
            groups=sorted(bad),
            **ev,
        )
    g, v = max(r.update_ratio.items(), key=lambda kv: kv[1])
    return ruled_out(
        fid,
        f"Largest median update/parameter ratio is {fmt(v)} ({g}).",
        f"最大的更新量/参数之比中位数为 {fmt(v)}（{g}）。",
        **ev,
    )
