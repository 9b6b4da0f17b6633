"""loss-unstable: is the global loss diverging, or oscillating far beyond minibatch noise?

Two signs, either confirms (both measured on the global loss, skipped steps excluded):

* Excursion — "the loss rises above its early level and stays": L0 is the global loss at the
  first step (the initial model). A step is above when L(t) > L0 + margin, with
  margin = max(:data:`REL_RISE` · |L0|, :data:`NOISE_Z` · σ_pred(0)) (σ_pred: the predicted
  minibatch noise of that step, when measured). Confirmed when the longest run of consecutive
  steps above lasts ≥ max(:data:`MIN_RUN`, :data:`MIN_SHARE` · T) steps — longer than a spike
  (loss-spike covers those). A training run is supposed to end below its initial model; one that
  spends a tenth of the run ≥ 10 % above it was pushed out of its basin, the lr-too-high
  divergence Wortsman et al. 2023 ("Small-scale proxies for large-scale Transformer training
  instabilities") reproduce in small models with a high lr and no warmup. REL_RISE, MIN_RUN and
  MIN_SHARE are ddp-doctor's choices (a healthy run never stays 10 % above its starting loss).
* Oscillation — the 95 % interval of observed / predicted step-to-step std
  (:mod:`ddp_doctor.analysis.quantities.oscillation`) lies entirely above :data:`FAR_ABOVE`
  (2× the noise band's 1.5 limit): "far above the band", not a borderline case.

Ruled out when neither holds and both were measurable; coverage: the steps with a finite loss.
"""

from __future__ import annotations

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, coverage, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

REL_RISE = limit("loss-unstable", "rel_rise")
NOISE_Z = limit("loss-unstable", "noise_z")
MIN_RUN = int(limit("loss-unstable", "min_run"))
MIN_SHARE = limit("loss-unstable", "min_share")
FAR_ABOVE = limit("loss-unstable", "far_above")
MIN_STEPS = MIN_RUN + 2


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("loss-unstable",)


def check(ctx: Context) -> list[Finding]:
    return [loss_unstable(ctx)]


def _longest_run(mask: np.ndarray) -> tuple[int, int]:
    """(length, start) of the longest run of True."""
    best = (0, -1)
    run, start = 0, -1
    for i, v in enumerate(mask):
        if v:
            if run == 0:
                start = i
            run += 1
            if run > best[0]:
                best = (run, start)
        else:
            run = 0
    return best


def loss_unstable(ctx: Context) -> Finding:
    fid = "loss-unstable"
    loss = np.where(ctx.series.skipped, np.nan, ctx.series.global_loss)
    finite = np.flatnonzero(np.isfinite(loss))
    T = ctx.series.n_steps
    if finite.size < MIN_STEPS:
        return not_measured(
            fid,
            Text(
                f"Needs ≥ {MIN_STEPS} optimizer steps with a finite global loss ({finite.size} so far).",
                f"需要至少 {MIN_STEPS} 个有有限全局损失的优化步（目前 {finite.size} 个）。",
            ),
            steps=int(finite.size),
        )
    t0 = int(finite[0])
    l0 = float(loss[t0])
    sigma0 = ctx.noise.predicted_trace[t0] if ctx.noise.predicted_trace.size > t0 else np.nan
    margin = max(REL_RISE * abs(l0), NOISE_Z * float(sigma0) if np.isfinite(sigma0) else 0.0)
    above = np.isfinite(loss) & (loss > l0 + margin)
    above[: t0 + 1] = False
    need = max(MIN_RUN, int(np.ceil(MIN_SHARE * T)))
    length, start = _longest_run(above)
    start = ctx.series.step_of(start)  # the step number (columns skip steps on the rollup path)
    peak, final = float(np.nanmax(loss)), float(loss[finite[-1]])
    osc = ctx.oscillation
    ev = dict(
        initial_loss=l0,
        initial_step=ctx.series.step_of(t0),
        margin=margin,
        steps_above=int(above.sum()),
        longest_run_above=length,
        longest_run_start=start if length else None,
        run_needed=need,
        peak=peak,
        final_loss=final,
        oscillation=osc.to_json(),
        threshold=threshold_sentence(fid) + Text(f" (here {need} steps)", f"（此处为 {need} 步）"),
    )
    excursion = length >= need
    oscillating = osc.ratio_low is not None and osc.ratio_low > FAR_ABOVE
    if excursion or oscillating:
        parts_en, parts_zh = [], []
        if excursion:
            parts_en.append(
                f"the global loss stayed above its initial {fmt(l0)} + {fmt(margin)} for {length} "
                f"consecutive steps from step {start} (peak {fmt(peak)}, final {fmt(final)})"
            )
            parts_zh.append(
                f"全局损失从第 {start} 步起连续 {length} 步高于初始值 {fmt(l0)} + {fmt(margin)}"
                f"（峰值 {fmt(peak)}，最终 {fmt(final)}）"
            )
        if oscillating:
            parts_en.append(
                f"its step-to-step std is {osc.ratio:.1f}× the minibatch-noise band "
                f"(95% interval {osc.ratio_low:.1f}–{osc.ratio_high:.1f}, above {FAR_ABOVE:g})"
            )
            parts_zh.append(
                f"逐步标准差是小批量噪声带的 {osc.ratio:.1f} 倍（95% 区间 {osc.ratio_low:.1f}–{osc.ratio_high:.1f}，"
                f"高于 {FAR_ABOVE:g}）"
            )
        return confirmed(
            fid,
            Text(
                "Training is unstable: " + "; ".join(parts_en) + ".",
                "训练不稳定：" + "；".join(parts_zh) + "。",
            ),
            **ev,
        )
    cover = coverage(
        int(finite.size),
        T,
        Text("steps with a finite global loss", "有有限全局损失的步"),
    )
    if osc.decision == "not-measured" or osc.ratio_low is None:
        return inconclusive(
            fid,
            Text(
                f"The loss never stayed above its initial {fmt(l0)} + {fmt(margin)} for {need} steps "
                f"(longest {length}), but its oscillation could not be compared with the noise band "
                f"({osc.reason}).",
                f"损失没有连续 {need} 步高于初始值 {fmt(l0)} + {fmt(margin)}（最长 {length} 步），但其波动无法与噪声带"
                f"比较（{osc.reason}）。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"The loss never stayed above its initial {fmt(l0)} + {fmt(margin)} for {need} steps "
            f"(longest {length}), and its step-to-step std is not far above the noise band "
            f"(ratio {osc.ratio:.2f}, 95% interval {osc.ratio_low:.2f}–{osc.ratio_high:.2f}).",
            f"损失没有连续 {need} 步高于初始值 {fmt(l0)} + {fmt(margin)}（最长 {length} 步），逐步标准差也没有远超"
            f"噪声带（比值 {osc.ratio:.2f}，95% 区间 {osc.ratio_low:.2f}–{osc.ratio_high:.2f}）。",
        ),
        coverage=cover,
        **ev,
    )
