"""Hypothesis `spikes-clipping`: gradient spikes, clipping missing or misapplied.

* loss-spike / grad-spike: the robust rule of :mod:`ddp_doctor.analysis.quantities.spikes` on the
  global loss and on the global gradient norm (comm hook, else clip_grad_norm_'s total_norm);
  gradient spikes carry the lag to the loss spike that follows. A gradient spike that clipping
  cut to max_norm on each of its steps, with no loss spike after it, reached the update bounded:
  it is reported in the evidence but does not confirm the finding.
* clip-saturated: clipping is active when total_norm > max_norm (by value, `clip_grad_value_`:
  when the largest |gradient| exceeds clip_value); saturated when that holds on more
  than :data:`SATURATED_SHARE` of the (non-skipped) clipped steps after warmup — then clipping
  rescales most updates, i.e. it lowers the lr. Gradient norms are large early in training by
  nature (clip=1.0 is routinely active in the first steps), so the share is judged only on steps
  after the lr warmup and only once :data:`MIN_JUDGED_STEPS` such steps exist; before that the
  finding is inconclusive with the share so far.
* clip-before-unscale: a clip call recorded with a GradScaler active and ``after_unscale`` false
  (PyTorch AMP docs, "Gradient clipping": call ``scaler.unscale_(optimizer)`` first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddp_doctor.analysis.checks.lr_schedule import warmup_length
from ddp_doctor.analysis.context import MIN_GRAD_NORM_STEPS, Context
from ddp_doctor.analysis.make import confirmed, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.analysis.quantities.shards import combine_clip
from ddp_doctor.analysis.quantities.spikes import (
    EARLY_LOSS_FACTOR,
    MAX_LAG,
    MIN_HISTORY,
    MIN_REL_RISE,
    SPIKE_Z,
    WINDOW,
    lags,
)
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding
from ddp_doctor.rundir.reader import CLIP_COLUMNS

SATURATED_SHARE = limit("clip-saturated", "share")
MIN_JUDGED_STEPS = int(limit("clip-saturated", "min_steps"))
# a grad spike with no loss spike after it counts from this many times its median on
ALONE_FACTOR = limit("grad-spike", "alone_factor")
LISTED = 20
RULE = (
    f"robust z > {SPIKE_Z:g} (median/MAD of the previous {WINDOW} steps) and > "
    f"{MIN_REL_RISE:.0%} above the median"
)
LOSS_RULE = (
    RULE + f"; before {MIN_HISTORY} steps of history: > {EARLY_LOSS_FACTOR:g}× the mean of the steps before"
)


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("loss-spike", "grad-spike", "clip-saturated", "clip-before-unscale")


def check(ctx: Context) -> list[Finding]:
    return [_loss_spike(ctx), _grad_spike(ctx), _clip_saturated(ctx), _clip_before_unscale(ctx)]


def _loss_spike(ctx: Context) -> Finding:
    fid = "loss-spike"
    sp = ctx.loss_spikes
    ev: dict[str, Any] = dict(
        spikes=[s.to_json() for s in sp[:LISTED]],
        count=len(sp),
        threshold=threshold_sentence(fid),
        steps_checked=ctx.series.n_steps,
    )
    if sp:
        first = sp[0]
        if np.isfinite(first.z):
            vs = Text(
                f"median {first.baseline:.4g} (z = {first.z:.0f})",
                f"中位数 {first.baseline:.4g}（z = {first.z:.0f}）",
            )
        else:
            vs = Text(
                f"{first.baseline:.4g}, the mean of the steps before (> {EARLY_LOSS_FACTOR:g}×)",
                f"之前各步均值 {first.baseline:.4g}（> {EARLY_LOSS_FACTOR:g} 倍）",
            )
        return confirmed(
            fid,
            Text(
                f"{len(sp)} loss spike(s); first at step {first.step}: {first.peak:.4g} vs {vs.en}.",
                f"{len(sp)} 个损失尖峰；首个在第 {first.step} 步：{first.peak:.4g}，{vs.zh}。",
            ),
            **ev,
        )
    if ctx.series.n_steps <= MIN_HISTORY:
        return not_measured(
            fid,
            Text(f"Needs more than {MIN_HISTORY} optimizer steps.", f"需要多于 {MIN_HISTORY} 个优化步。"),
            steps=ctx.series.n_steps,
        )
    return ruled_out(
        fid,
        Text(
            f"No loss spike in {ctx.series.n_steps} steps by the robust rule.",
            f"按稳健规则，{ctx.series.n_steps} 步中没有损失尖峰。",
        ),
        **ev,
    )


def _clipped_steps(ctx: Context) -> set[int]:
    """Steps whose gradient was rescaled by clip_grad_norm_ (total_norm > max_norm)."""
    step, clip = _clips(ctx)
    mx, tn = clip[:, CLIP_COLUMNS.index("max_norm")], clip[:, CLIP_COLUMNS.index("total_norm")]
    return {int(x) for x in step[np.isfinite(tn) & (tn > mx)]}


def _grad_spike(ctx: Context) -> Finding:
    fid = "grad-spike"
    if ctx.grad_norm_source is None:
        n = int(np.isfinite(ctx.grad_norm).sum())
        return not_measured(
            fid,
            Text(
                f"Gradient norms on {n} optimizer steps (need {MIN_GRAD_NORM_STEPS}; from the "
                "DDP comm hook, a DeepSpeed engine or clip_grad_norm_ calls).",
                f"仅 {n} 个优化步有梯度范数（至少需要 {MIN_GRAD_NORM_STEPS} 个；来自 DDP 通信钩子、"
                "DeepSpeed 引擎或 clip_grad_norm_ 调用）。",
            ),
            steps_with_grad_norm=n,
        )
    sp = ctx.grad_spikes
    lag = lags(sp, ctx.loss_spikes)
    followed = [x for x in lag if x["lag"] is not None]
    clipped = _clipped_steps(ctx)
    # a spike clipped on every one of its steps reached the update only at max_norm
    absorbed = [
        g
        for g, x in zip(sp, lag)
        if x["lag"] is None and all(t in clipped for t in range(g.step, g.step + g.length))
    ]
    # a spike that no loss spike followed and that stayed below 2× its baseline is gradient noise
    # of a small batch, not an event (the 2× factor of llm-foundry's loss rule, applied to the norm)
    absorbed_ids = {id(g) for g in absorbed}
    small = [
        g
        for g, x in zip(sp, lag)
        if x["lag"] is None and id(g) not in absorbed_ids and g.peak < ALONE_FACTOR * g.baseline
    ]
    ev: dict[str, Any] = dict(
        spikes=[s.to_json() for s in sp[:LISTED]],
        count=len(sp),
        below_2x_without_loss_spike=len(small),
        source=ctx.grad_norm_source,
        lag_to_loss_spike=lag[:LISTED],
        followed_by_loss_spike=len(followed),
        max_lag=MAX_LAG,
        absorbed_by_clipping=len(absorbed),
        threshold=threshold_sentence(fid),
    )
    if sp and len(absorbed) + len(small) < len(sp):
        tail = (
            f"; {len(followed)} followed by a loss spike (lag {followed[0]['lag']} step(s))"
            if followed
            else "; no loss spike followed"
        )
        return confirmed(
            fid,
            Text(
                f"{len(sp)} gradient-norm spike(s), first at step {sp[0].step} "
                f"({fmt(sp[0].peak)} vs median {fmt(sp[0].baseline)}){tail}.",
                f"{len(sp)} 个梯度范数尖峰，首个在第 {sp[0].step} 步（{fmt(sp[0].peak)}，中位数 {fmt(sp[0].baseline)}）；"
                f"其后有 {len(followed)} 个损失尖峰。",
            ),
            **ev,
        )
    if sp:
        return ruled_out(
            fid,
            Text(
                f"{len(sp)} gradient-norm spike(s) (first at step {sp[0].step}: {fmt(sp[0].peak)} vs "
                f"median {fmt(sp[0].baseline)}) were clipped to max_norm or stayed below {ALONE_FACTOR:g}× "
                "the median, and no loss spike followed.",
                f"{len(sp)} 个梯度范数尖峰（首个在第 {sp[0].step} 步：{fmt(sp[0].peak)}，中位数 {fmt(sp[0].baseline)}）"
                f"被裁剪到 max_norm 或低于中位数的 {ALONE_FACTOR:g} 倍，其后没有损失尖峰。",
            ),
            **ev,
        )
    return ruled_out(
        fid, Text("No gradient-norm spike by the robust rule.", "按稳健规则，没有梯度范数尖峰。"), **ev
    )


def _clips(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """The lowest rank's clip calls: steps and values (rundir.CLIP_COLUMNS), FSDP2 shards combined."""
    return combine_clip(ctx.run)


def _clip_saturated(ctx: Context) -> Finding:
    fid = "clip-saturated"
    step, clip = _clips(ctx)
    if step.size == 0:
        return ruled_out(
            fid,
            Text(
                "No clip_grad_norm_ or clip_grad_value_ call was recorded, so clipping cannot saturate.",
                "没有记录到 clip_grad_norm_ 或 clip_grad_value_ 调用，因此裁剪不会饱和。",
            ),
            clip_calls=0,
        )
    # by norm: active when total_norm > max_norm; by value (clip_grad_value_): when the largest
    # |gradient| exceeds clip_value, i.e. the call changed the gradient
    col = {k: clip[:, CLIP_COLUMNS.index(k)] for k in CLIP_COLUMNS}
    by_value = np.isfinite(col["clip_value"]) & ~np.isfinite(col["max_norm"])
    mx = np.where(by_value, col["clip_value"], col["max_norm"])
    tn = np.where(by_value, col["max_abs"], col["total_norm"])
    bound_name = "clip_value" if by_value.all() else "max_norm"
    at, in_range = ctx.series.pos(step)
    on_skipped = np.zeros(step.size, dtype=bool)
    on_skipped[in_range] = ctx.series.skipped[at[in_range]]
    usable = np.isfinite(tn) & np.isfinite(mx) & ~on_skipped
    start = warmup_length(ctx.series.lr, ctx.series.steps) or 0
    early, late = usable & (step < start), usable & (step >= start)
    clipped = tn > mx
    active, total = int((clipped & late).sum()), int(late.sum())
    early_active, early_total = int((clipped & early).sum()), int(early.sum())
    max_norm = float(mx[usable][-1]) if usable.any() else None
    if total + early_total == 0:
        return not_measured(fid, Text("No finite clip record.", "没有有限值的裁剪记录。"))
    ev: dict[str, Any] = dict(
        clipped_steps=active,
        judged_steps=total,
        warmup_steps=start,
        clipped_during_warmup=early_active,
        warmup_clip_calls=early_total,
        threshold=threshold_sentence(fid),
    )
    ev[bound_name] = max_norm
    if by_value.any():
        ev["clipped_by_value"] = int(by_value.sum())
        kept = (col["clipped_norm"] / col["total_norm"])[by_value & usable & clipped]
        kept = kept[np.isfinite(kept)]
        # how much of the gradient's norm value clipping left on the steps it changed
        ev["median_norm_kept"] = float(np.median(kept)) if kept.size else None
    if total < MIN_JUDGED_STEPS:
        a, n = active + early_active, total + early_total
        return inconclusive(
            fid,
            Text(
                f"Clipping was active on {a} of {n} steps so far, but only {total} steps after "
                f"warmup (need {MIN_JUDGED_STEPS}): early-training gradients are large by nature.",
                f"目前 {n} 步中有 {a} 步触发了裁剪，但 warmup 之后只有 {total} 步（需要 {MIN_JUDGED_STEPS} 步）："
                "训练初期梯度本来就大。",
            ),
            **ev,
        )
    share = active / total
    ev["share"] = share
    if share > SATURATED_SHARE:
        return confirmed(
            fid,
            Text(
                f"Clipping was active on {share:.0%} of steps ({active}/{total}, {bound_name} "
                f"{max_norm:g}): it effectively lowers the lr.",
                f"{share:.0%} 的步触发了裁剪（{active}/{total}，{bound_name} {max_norm:g}）：实际上降低了学习率。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"Clipping was active on {share:.0%} of steps ({active}/{total}).",
            f"{share:.0%} 的步触发了裁剪（{active}/{total}）。",
        ),
        **ev,
    )


def _clip_before_unscale(ctx: Context) -> Finding:
    fid = "clip-before-unscale"
    step, clip = _clips(ctx)
    with_scaler = clip[:, CLIP_COLUMNS.index("scaler")] == 1
    scaler = ctx.config("scaler")
    if not with_scaler.any():
        why = "no GradScaler" if not (scaler and scaler.get("enabled", True)) else "no clip call"
        return ruled_out(
            fid,
            Text(f"No clip call on scaled gradients ({why}).", f"没有在缩放后的梯度上裁剪（{why}）。"),
            clip_calls=int(step.size),
            scaler=bool(scaler),
        )
    n = int(with_scaler.sum())
    bad = step[with_scaler & (clip[:, CLIP_COLUMNS.index("after_unscale")] == 0)]
    ev: dict[str, Any] = dict(
        clip_calls_with_scaler=n,
        before_unscale=int(bad.size),
        first_step=int(bad[0]) if bad.size else None,
        threshold=threshold_sentence(fid),
    )
    if bad.size:
        return confirmed(
            fid,
            Text(
                f"clip_grad_norm_ ran before scaler.unscale_ in {bad.size} of {n} "
                f"steps (first at step {bad[0]}): it clipped loss-scaled gradients.",
                f"{n} 个步中有 {bad.size} 个在 scaler.unscale_ 之前调用了 clip_grad_norm_"
                f"（首次在第 {bad[0]} 步）：裁剪的是缩放后的梯度。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"All {n} clip calls came after scaler.unscale_.", f"全部 {n} 次裁剪都在 scaler.unscale_ 之后。"
        ),
        **ev,
    )
