"""Hypothesis `lr-schedule` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "lr-schedule",
    Text(
        "Warmup too short, scheduler stepped per micro-batch, lr too high",
        "warmup 太短、调度器按微批次步进、学习率过高",
    ),
    "warmup-short, scheduler-per-microstep, update-ratio-high, loss-unstable",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "scheduler-per-microstep",
        "RL",
        "warning",
        Text("LR scheduler stepped per micro-batch", "学习率调度器按微批次步进"),
        Text(
            "The learning-rate scheduler is stepped once per micro-batch instead of once per optimizer "
            "step, so warmup ends (and decay runs) accumulation-count times too early.",
            "学习率调度器在每个微批次都步进，而不是每个优化步一次，因此 warmup 提前结束（衰减也提前）了累积步数倍。",
        ),
        Text(
            "Scheduler steps per optimizer step, and the lr trace.",
            "每个优化步的调度器步数，以及学习率曲线。",
        ),
        Text(
            "Call `scheduler.step()` next to `optimizer.step()`, once per optimizer step.",
            "把 `scheduler.step()` 放在 `optimizer.step()` 旁边，每个优化步调用一次。",
        ),
        threshold=rule(
            Text(
                "scheduler steps = micro-steps × k in > {share:.0%} of steps with ≥ 2 micro-steps; k = 1, or k = world size when accelerate's `AcceleratedScheduler` (split_batches=False) made the call",
                "在至少 2 个微步的步中，超过 {share:.0%} 的调度器步数 = 微步数 × k；k = 1，若调用来自 accelerate 的 `AcceleratedScheduler`（split_batches=False）则 k = world size",
            ),
            "count; accelerate steps the wrapped scheduler num_processes times per optimizer step on purpose",
            share=0.5,
        ),
        cause_rank=100,
    ),
    spec(
        "warmup-short",
        "R",
        "warning",
        Text("Warmup too short", "warmup 太短"),
        Text(
            "Warmup ends within the window where the loss spikes start, or is shorter than the "
            "documented minimum for Adam-type optimizers (about 2/(1-beta2) steps, Ma & Yarats 2021).",
            "warmup 在损失开始出现尖峰的窗口内结束，或短于 Adam 类优化器的建议最小值（约 2/(1-beta2) 步，Ma & Yarats 2021）。",
        ),
        Text("Warmup length in optimizer steps, spike steps.", "以优化步计的 warmup 长度，以及尖峰所在步。"),
        Text(
            "Lengthen the warmup to at least 2/(1-beta2) optimizer steps.",
            "把 warmup 延长到至少 2/(1-beta2) 个优化步。",
        ),
        threshold=rule(
            Text(
                "spike within max({min_window:g}, warmup/2) steps of warmup end (when there is a warmup), or, for an "
                "Adam-type optimizer (one with β2), warmup < 2/(1−β2) with a spike before that",
                "尖峰出现在 warmup 结束前后 max({min_window:g}, warmup/2) 步内（存在 warmup 时），或对 Adam 类优化器（有 β2）："
                "warmup < 2/(1−β2) 且尖峰出现在此之前",
            ),
            "Ma & Yarats 2021, On the adequacy of untuned warmup for adaptive optimization",
            min_window=10,
        ),
        log_fields=("loss", "lr"),
        cause_rank=90,
    ),
    spec(
        "update-ratio-high",
        "R",
        "warning",
        Text("Update/parameter ratio too high", "更新量与参数之比过高"),
        Text(
            "The per-layer-group ratio ||update|| / ||parameter|| is far above the usual range "
            "(around 1e-3 per step), so the learning rate is too high for those layers.",
            "按层组计算的 ||更新量|| / ||参数|| 远高于通常范围（每步约 1e-3），这些层的学习率过高。",
        ),
        Text(
            "Ratio per layer group, and which groups exceed the threshold.",
            "各层组的比值，以及超过阈值的层组。",
        ),
        Text(
            "Lower the learning rate (or use a per-group lr for the affected groups).",
            "降低学习率（或为受影响的层组设置单独的学习率）。",
        ),
        threshold=rule(
            Text(
                "median ‖update‖/‖param‖ over sampled steps ≥ {early_steps:g} above: norm gains {norm:g}, "
                "embeddings/matrices/vectors {matrix:g} (biases not judged; ≤ 2 tensors per type sampled every "
                "5 steps, level full all groups)",
                "第 {early_steps:g} 步之后采样步上 ‖更新‖/‖参数‖ 的中位数高于：归一化增益 {norm:g}，嵌入/矩阵/向量 {matrix:g}"
                "（不判断偏置）",
            ),
            "CS231n (~1e-3 usual) × 10 for norm gains (init 1: the ratio reads Adam's step size); init-scale "
            "allowance for std-0.02 tensors, calibrated on healthy from-scratch runs (embeddings 0.011–0.04) "
            "vs lr 100× (norms 0.02–0.23); see quantities/update_ratio.py",
            norm=1e-2,
            matrix=1e-1,
            early_steps=10,
        ),
        cause_rank=80,
        caused_by=(
            "accum-loss-unscaled",
            "scheduler-per-microstep",
            "warmup-short",
        ),
    ),
    spec(
        "loss-unstable",
        "R",
        "warning",
        Text(
            "Loss unstable: above its starting level or oscillating far beyond noise",
            "损失不稳定：高于初始水平或波动远超噪声",
        ),
        Text(
            "The global loss rose above its value at the first step and stayed there for many steps, "
            "or its step-to-step fluctuation is far above the minibatch-noise band: training is "
            "unstable, most often because the learning rate is too high for this model and warmup "
            '(Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer training '
            'instabilities").',
            "全局损失升到第一步的水平之上并持续多步，或其逐步波动远超小批量噪声带：训练不稳定，最常见的原因是学习率"
            "对该模型和 warmup 而言过高（Wortsman 等，2023，“Small-scale proxies for large-scale Transformer "
            "training instabilities”）。",
        ),
        Text(
            "Initial loss, the longest run of steps above it and its margin; observed/predicted "
            "step-to-step std with its confidence interval.",
            "初始损失、高于它的最长连续步数及其阈值；观测/预测逐步标准差之比及其置信区间。",
        ),
        Text(
            "Lower the learning rate (try 3–10× lower) and add a warmup of a few hundred steps; clip "
            "gradients (`clip_grad_norm_(params, 1.0)`).",
            "降低学习率（先试 3–10 倍）并加入几百步的 warmup；做梯度裁剪（`clip_grad_norm_(params, 1.0)`）。",
        ),
        threshold=rule(
            Text(
                "≥ max({min_run:g}, {min_share:.0%} of the steps) consecutive steps above the initial loss + "
                "max({rel_rise:.0%}, {noise_z:g} σ_pred); or the observed/predicted step-to-step std's 95% "
                "interval above {far_above:g}",
                "≥ max({min_run:g}, 步数的 {min_share:.0%}) 个连续步高于初始损失 + max({rel_rise:.0%}, {noise_z:g} σ_pred)；"
                "或观测/预测逐步标准差之比的 95% 区间高于 {far_above:g}",
            ),
            "the lr-too-high divergence of Wortsman et al. 2023 (small-scale proxies); margins are ddp-doctor's choice",
            min_run=5,
            min_share=0.10,
            rel_rise=0.10,
            noise_z=3.0,
            far_above=3.0,
        ),
        symptom=True,
        caused_by=(
            "replica-divergence",
            "no-sync-after-forward",
            "accum-loss-unscaled",
            "update-ratio-high",
            "warmup-short",
            "scheduler-per-microstep",
            "clip-before-unscale",
            "fp16-overflow",
        ),
    ),
)
