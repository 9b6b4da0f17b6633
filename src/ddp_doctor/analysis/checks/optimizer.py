"""Hypothesis `optimizer`: Adam epsilon / beta2 / optimizer-state start-up.

adam-eps-dominated needs level `full` (Adam state; :mod:`ddp_doctor.analysis.quantities.ratios`:
share of v̂ < eps² > 0.25). update-ratio-high is measured at every level from the sampled
`update` records (:mod:`ddp_doctor.analysis.quantities.update_ratio`: per-type thresholds,
judged from step 10 on).
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.analysis.context import Context, deepspeed_owns_weights
from ddp_doctor.analysis.make import confirmed, coverage, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.analysis.quantities.ratios import ADAM_EPS_SHARE
from ddp_doctor.analysis.quantities.update_ratio import EARLY_STEPS, MIN_SAMPLES, NOT_JUDGED, THRESHOLDS
from ddp_doctor.core.catalog import Text, threshold_sentence
from ddp_doctor.core.findings import Finding

ENABLE_FULL = "run with `ddp-doctor run --level full`"
ENABLE_FULL_ZH = "请使用 `ddp-doctor run --level full` 运行"


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("update-ratio-high", "adam-eps-dominated")


def check(ctx: Context) -> list[Finding]:
    return [_eps(ctx), update_ratio(ctx)]


def _eps(ctx: Context) -> Finding:
    fid = "adam-eps-dominated"
    opt = ctx.config("optimizer") or {}
    kind = str(opt.get("type", ""))
    if opt and "adam" not in kind.lower():
        return ruled_out(
            fid,
            Text(f"The optimizer is {kind}, not an Adam variant.", f"优化器是 {kind}，不是 Adam 类。"),
            optimizer=kind,
        )
    r = ctx.ratios
    if r is None or not r.adam_share:
        return not_measured(
            fid,
            Text(f"Needs Adam state statistics: {ENABLE_FULL}.", f"需要 Adam 状态统计：{ENABLE_FULL_ZH}。"),
            level=ctx.level,
            optimizer=kind or None,
        )
    bad = {g: v for g, v in r.adam_share.items() if v > ADAM_EPS_SHARE}
    ev: dict[str, Any] = dict(
        share_v_below_eps2=r.adam_share,
        eps=r.adam_eps,
        records=r.records,
        threshold=threshold_sentence(fid),
    )
    if bad:
        g, v = max(bad.items(), key=lambda kv: kv[1])
        return confirmed(
            fid,
            Text(
                f"In {g}, {v:.0%} of Adam's second-moment entries are below eps² "
                f"(eps = {r.adam_eps.get(g, float('nan')):g}): eps sets their step.",
                f"{g} 中 {v:.0%} 的 Adam 二阶矩元素小于 eps²（eps = {r.adam_eps.get(g, float('nan')):g}）："
                "这些元素的步长由 eps 决定。",
            ),
            groups=sorted(bad),
            **ev,
        )
    worst = max(r.adam_share.values())
    return ruled_out(
        fid,
        Text(
            f"At most {worst:.1%} of Adam's second-moment entries are below eps².",
            f"Adam 二阶矩中小于 eps² 的比例至多为 {worst:.1%}。",
        ),
        **ev,
    )


def update_ratio(ctx: Context) -> Finding:
    fid, u = "update-ratio-high", ctx.updates
    engine = deepspeed_owns_weights(ctx.run)
    if u is None and engine is not None:
        return not_measured(
            fid,
            Text(
                f"Update/parameter ratios are not recorded on this setup ({engine}).",
                f"此设置下不记录更新量/参数比（{engine}）。",
            ),
            level=ctx.level,
        )
    if u is None:
        return not_measured(
            fid,
            Text(
                "No update/parameter norms were recorded: record the run again with this version (it "
                f"samples them every few steps at every level) or {ENABLE_FULL}.",
                "没有记录到更新量/参数范数：请用当前版本重新记录（各级别都会每隔几个优化步采样）"
                f"或{ENABLE_FULL_ZH}。",
            ),
            level=ctx.level,
        )
    per_type = {t: r.to_json() for t, r in sorted(u.per_type.items())}
    ev = dict(
        source=u.source,
        per_type=per_type,
        judged_from_step=EARLY_STEPS,
        thresholds={t: THRESHOLDS[t] for t in sorted(THRESHOLDS)},
        not_judged=list(NOT_JUDGED),
        threshold=threshold_sentence(fid),
    )
    judged = u.judged
    cov_steps = len(u.judged_steps)
    # samples spread over the run: they cover it up to the last one (steps < EARLY_STEPS are not judged)
    last = u.judged_steps[-1] if u.judged_steps else EARLY_STEPS - 1
    cover = coverage(
        last + 1 - EARLY_STEPS,
        max(ctx.series.n_steps - EARLY_STEPS, 1),
        Text(
            f"ratios sampled at steps {_steps_text(u.judged_steps)}; steps < {EARLY_STEPS} not judged",
            f"在第 {_steps_text(u.judged_steps)} 步采样；前 {EARLY_STEPS} 步不参与判断",
        ),
    )
    if u.high:
        names = ", ".join(
            f"{t} {fmt(v)} (> {THRESHOLDS[t]:g})" for t, v in sorted(u.high.items(), key=lambda kv: -kv[1])
        )
        return confirmed(
            fid,
            Text(
                f"Median update/parameter ratio far above the usual ~1e-3 for: {names}; judged on "
                f"{cov_steps} sampled step(s) from step {EARLY_STEPS} on: the lr is too high for these tensors.",
                f"以下参数类型的更新量/参数之比中位数远高于通常的约 1e-3：{names}；基于第 {EARLY_STEPS} 步之后"
                f"的 {cov_steps} 个采样步：这些参数的学习率过高。",
            ),
            types=sorted(u.high),
            **ev,
        )
    if not judged:
        return inconclusive(
            fid,
            Text(
                f"Too few update samples after the first {EARLY_STEPS} steps (need {MIN_SAMPLES} per "
                "parameter type; early steps measure the lr against the init scale, not instability).",
                f"前 {EARLY_STEPS} 步之后的更新采样太少（每种参数类型至少需要 {MIN_SAMPLES} 个；早期步只反映学习率与"
                "初始化尺度之比，而不是不稳定）。",
            ),
            **ev,
        )
    t, r = max(judged.items(), key=lambda kv: (kv[1].median or 0.0) / THRESHOLDS[kv[0]])
    return ruled_out(
        fid,
        Text(
            f"Median update/parameter ratio per parameter type within thresholds; closest: {t} "
            f"{fmt(r.median)} (threshold {THRESHOLDS[t]:g}).",
            f"各参数类型的更新量/参数之比中位数均在阈值内；最接近的是 {t} {fmt(r.median)}（阈值 {THRESHOLDS[t]:g}）。",
        ),
        coverage=cover,
        **ev,
    )


def _steps_text(steps: list[int], limit: int = 8) -> str:
    if len(steps) <= limit:
        return ", ".join(str(s) for s in steps)
    return ", ".join(str(s) for s in steps[: limit - 2]) + f", …, {steps[-1]}"
