"""Hypothesis `batch-size`: is the effective batch too small for the model?

* batch-below-noise-scale: McCandlish et al. 2018 show the critical batch B_crit ≈ B_simple; far
  below it each step is dominated by gradient noise. "Far" = the effective batch (samples) is less
  than B_simple / :data:`FAR_BELOW`, with B_simple's 2-standard-error interval entirely on that
  side (otherwise inconclusive).
* oscillation-within-noise: observed / predicted step-to-step loss std ≤ WITHIN_NOISE_RATIO
  (:mod:`ddp_doctor.analysis.quantities.noise_band`). Info: "this is not a bug".
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.analysis.quantities.noise_band import WITHIN_NOISE_RATIO
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

FAR_BELOW = limit("batch-below-noise-scale", "far_below")


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("oscillation-within-noise", "batch-below-noise-scale")


def check(ctx: Context) -> list[Finding]:
    return [_below_noise_scale(ctx), oscillation_within_noise(ctx)]


def _below_noise_scale(ctx: Context) -> Finding:
    fid, g, b = "batch-below-noise-scale", ctx.gns, ctx.batch.samples
    if g.b_simple is None or b is None:
        return not_measured(
            fid,
            Text(f"B_simple not measured: {g.reason}.", f"未测得 B_simple：{g.reason}。"),
            reason=g.reason,
            effective_batch_samples=b,
        )
    se = g.stderr or 0.0
    lo, hi = g.b_simple - 2 * se, (float("inf") if g.lower_bound else g.b_simple + 2 * se)
    ev: dict[str, Any] = dict(
        b_simple=g.b_simple,
        b_simple_stderr=g.stderr,
        b_simple_is_lower_bound=g.lower_bound,
        b_simple_tokens=g.b_simple_tokens,
        effective_batch_samples=b,
        effective_batch_tokens=ctx.batch.tokens,
        steps_used=g.steps_used,
        threshold=threshold_sentence(fid),
    )
    bound = "≥ " if g.lower_bound else ""
    pm = f" ± {fmt(se)}" if g.stderr else ""
    if b * FAR_BELOW < lo or (g.lower_bound and b * FAR_BELOW < g.b_simple):
        return confirmed(
            fid,
            Text(
                f"Effective batch {b:g} samples is far below the gradient noise scale "
                f"B_simple = {bound}{fmt(g.b_simple)}{pm} samples: steps are noise-dominated.",
                f"有效批量 {b:g} 个样本远小于梯度噪声尺度 B_simple = {bound}{fmt(g.b_simple)}{pm} 个样本："
                "每一步都由噪声主导。",
            ),
            **ev,
        )
    if b * FAR_BELOW >= hi:
        return ruled_out(
            fid,
            Text(
                f"Effective batch {b:g} samples vs B_simple = {fmt(g.b_simple)}{pm} samples: not far below.",
                f"有效批量 {b:g} 个样本，B_simple = {fmt(g.b_simple)}{pm} 个样本：并非远小于。",
            ),
            **ev,
        )
    return inconclusive(
        fid,
        Text(
            f"Effective batch {b:g} samples vs B_simple = {fmt(g.b_simple)}{pm} samples: "
            "the uncertainty straddles the threshold; record more steps.",
            f"有效批量 {b:g} 个样本，B_simple = {fmt(g.b_simple)}{pm} 个样本：不确定度跨越阈值，需要记录更多步。",
        ),
        **ev,
    )


def oscillation_within_noise(ctx: Context) -> Finding:
    fid, n = "oscillation-within-noise", ctx.noise
    if n.ratio is None:
        return _short_run(ctx, n.reason)
    ev: dict[str, Any] = dict(
        observed_std=n.observed_std,
        predicted_std=n.predicted_std,
        ratio=n.ratio,
        units=n.units,
        steps_used=n.steps_used,
        rank0_local_std=n.rank0_std,
        rank0_over_global=n.rank0_over_global,
        amplitude_last_third_over_first=n.amplitude_last_over_first,
        effective_batch_samples=ctx.batch.samples,
        effective_batch_tokens=ctx.batch.tokens,
        threshold=threshold_sentence(fid),
    )
    trend = ""
    if n.amplitude_last_over_first is not None:
        trend = (
            f" The fluctuation {'shrinks' if n.amplitude_last_over_first < 1 else 'does not shrink'}"
            f" over the run (last/first third = {n.amplitude_last_over_first:.2f})."
        )
    if n.ratio <= WITHIN_NOISE_RATIO:
        return confirmed(
            fid,
            Text(
                f"Step-to-step loss std {fmt(n.observed_std)} is within the minibatch-noise "
                f"band {fmt(n.predicted_std)} predicted for this batch (ratio {n.ratio:.2f}): "
                "this is not a bug." + trend,
                f"逐步损失标准差 {fmt(n.observed_std)} 在当前批量预测的小批量噪声带 {fmt(n.predicted_std)} 之内"
                f"（比值 {n.ratio:.2f}）：这不是 bug。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"Step-to-step loss std {fmt(n.observed_std)} is {n.ratio:.2f}× the minibatch-noise "
            f"band {fmt(n.predicted_std)}: the oscillation is larger than batch noise explains." + trend,
            f"逐步损失标准差 {fmt(n.observed_std)} 是小批量噪声带 {fmt(n.predicted_std)} 的 "
            f"{n.ratio:.2f} 倍：波动大于批量噪声所能解释的范围。",
        ),
        **ev,
    )


def _short_run(ctx: Context, band_reason: str | None) -> Finding:
    """Fewer steps than the rolling-median band needs: decide from the second-difference estimate
    (quantities/oscillation.py) only when its 95 % interval lies on one side of the limit."""
    fid, o = "oscillation-within-noise", ctx.oscillation
    if o.ratio is None:
        return not_measured(
            fid,
            Text(
                f"Noise band not measured: {band_reason}; short-run estimate: {o.reason}.",
                f"未测得噪声带：{band_reason}；短程估计：{o.reason}。",
            ),
            reason=band_reason,
            short_run=o.to_json(),
        )
    ev: dict[str, Any] = dict(
        observed_std=o.observed_std,
        predicted_std=o.predicted_std,
        ratio=o.ratio,
        ratio_95=[o.ratio_low, o.ratio_high],
        steps_used=o.steps_used + 2,
        estimator="second differences (short run)",
        effective_batch_samples=ctx.batch.samples,
        threshold=threshold_sentence(fid),
    )
    nums = f"ratio {o.ratio:.2f}, 95% interval {o.ratio_low:.2f}–{o.ratio_high:.2f}, {o.steps_used + 2} steps"
    if o.decision == "within-band":
        return confirmed(
            fid,
            Text(
                f"Step-to-step loss std {fmt(o.observed_std)} is within the minibatch-noise band "
                f"{fmt(o.predicted_std)} ({nums}): this is not a bug.",
                f"逐步损失标准差 {fmt(o.observed_std)} 在小批量噪声带 {fmt(o.predicted_std)} 之内（{nums}）：这不是 bug。",
            ),
            **ev,
        )
    if o.decision == "above-band":
        return ruled_out(
            fid,
            Text(
                f"Step-to-step loss std {fmt(o.observed_std)} is above the minibatch-noise band "
                f"{fmt(o.predicted_std)} ({nums}): larger than batch noise explains.",
                f"逐步损失标准差 {fmt(o.observed_std)} 高于小批量噪声带 {fmt(o.predicted_std)}（{nums}）：大于批量噪声所能解释的范围。",
            ),
            **ev,
        )
    need = f"about {o.steps_needed} steps" if o.steps_needed else "a much longer run"
    return inconclusive(
        fid,
        Text(
            f"Step-to-step loss std {fmt(o.observed_std)} vs band {fmt(o.predicted_std)} ({nums}): the "
            f"interval straddles {WITHIN_NOISE_RATIO}; {need} would decide it.",
            f"逐步损失标准差 {fmt(o.observed_std)}，噪声带 {fmt(o.predicted_std)}（{nums}）：区间跨越 "
            f"{WITHIN_NOISE_RATIO}；需要{'约 ' + str(o.steps_needed) + ' 步' if o.steps_needed else '长得多的运行'}才能判定。",
        ),
        steps_needed=o.steps_needed,
        **ev,
    )
