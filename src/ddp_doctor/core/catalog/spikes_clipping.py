"""Hypothesis `spikes-clipping` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "spikes-clipping",
    Text("Gradient spikes, clipping missing or misapplied", "梯度尖峰，缺少裁剪或裁剪用错"),
    "loss-spike, grad-spike, clip-saturated, clip-before-unscale, loss-unstable",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "loss-spike",
        "R",
        "warning",
        Text("Loss spikes", "损失尖峰"),
        Text(
            "The loss spikes: steps whose loss lies far above the rolling median by a robust "
            "(median/MAD) rule.",
            "损失出现尖峰：按稳健（中位数/MAD）规则，某些步的损失远高于滚动中位数。",
        ),
        Text("Spike steps and magnitudes.", "尖峰所在步及幅度。"),
        Text(
            "Look at the grad-spike, warmup and lr findings for the cause; clip gradients; lower the lr.",
            "结合梯度尖峰、warmup、学习率相关的发现查找原因；做梯度裁剪；降低学习率。",
        ),
        threshold=rule(
            Text(
                "z > {z:g} (robust z over a {window:g}-step median/MAD) and > {rise:.0%} rise; before {min_history:g} values of history: > {early_factor:g}× the mean of the steps before",
                "稳健 z > {z:g}（{window:g} 步中位数/MAD）且上升超过 {rise:.0%}；历史不足 {min_history:g} 个值时：超过之前各步均值的 {early_factor:g} 倍",
            ),
            "OLMo 2 / llm-foundry (KillLossSpike) / Megatron spike rules",
            z=6.0,
            rise=0.10,
            window=50,
            min_history=8,
            early_factor=2.0,
        ),
        log_fields=("loss",),
        symptom=True,
        # a too-high lr makes the gradient norm and the loss jump
        caused_by=(
            "accum-loss-unscaled",
            "update-ratio-high",
            "warmup-short",
            "clip-before-unscale",
        ),
    ),
    spec(
        "grad-spike",
        "R",
        "warning",
        Text("Gradient-norm spikes", "梯度范数尖峰"),
        Text(
            "The global gradient norm spikes, and loss spikes may follow it.",
            "全局梯度范数出现尖峰，损失尖峰可能随之而来。",
        ),
        Text("Spike steps and the lag to the following loss spikes.", "尖峰所在步及其后损失尖峰的滞后步数。"),
        Text(
            "Enable gradient clipping (`clip_grad_norm_(params, 1.0)`), lower the lr or lengthen warmup.",
            "开启梯度裁剪（`clip_grad_norm_(params, 1.0)`），降低学习率或延长 warmup。",
        ),
        threshold=rule(
            Text(
                "z > {z:g} (robust z over a {window:g}-step median/MAD) and > {rise:.0%} rise; lag to a loss spike ≤ {max_lag:g}; spikes fully clipped, or below {alone_factor:g}× their median, with no loss spike after do not count",
                "稳健 z > {z:g}（{window:g} 步中位数/MAD）且上升超过 {rise:.0%}；损失尖峰滞后 ≤ {max_lag:g} 步；被完全裁剪或低于其中位数 {alone_factor:g} 倍、且之后没有损失尖峰的不计",
            ),
            "OLMo 2 / llm-foundry / Megatron spike rules",
            z=6.0,
            rise=0.10,
            window=50,
            max_lag=10,
            alone_factor=2.0,
        ),
        log_fields=("grad_norm",),
        symptom=True,
        # a too-high lr makes the gradient norm and the loss jump
        caused_by=(
            "accum-loss-unscaled",
            "update-ratio-high",
            "warmup-short",
        ),
    ),
    spec(
        "clip-saturated",
        "R",
        "warning",
        Text("Clipping active on most steps", "大多数步都触发了梯度裁剪"),
        Text(
            "Gradient clipping is active on most steps, which lowers the effective learning rate and "
            "hides how large the gradients really are.",
            "大多数步都触发了梯度裁剪，实际上降低了学习率，并掩盖了真实的梯度大小。",
        ),
        Text("Fraction of clipped steps and the clip threshold.", "被裁剪的步数比例以及裁剪阈值。"),
        Text(
            "Lower the learning rate or raise max_norm (clip_value when clipping by value) so that "
            "clipping only catches outliers.",
            "降低学习率或提高 max_norm（按值裁剪时为 clip_value），让裁剪只处理异常值。",
        ),
        threshold=rule(
            Text(
                "> {share:.0%} of ≥ {min_steps:g} post-warmup steps clipped",
                "warmup 之后至少 {min_steps:g} 步中超过 {share:.0%} 被裁剪",
            ),
            "early gradients are large by nature; fewer steps → inconclusive",
            share=0.5,
            min_steps=50,
        ),
        log_fields=("grad_norm", "max_norm"),
        symptom=True,
        caused_by=(
            "accum-loss-unscaled",
            "clip-before-unscale",
            "update-ratio-high",
        ),
    ),
    spec(
        "clip-before-unscale",
        "RL",
        "error",
        Text("Clipping on loss-scaled gradients", "在损失缩放后的梯度上做裁剪"),
        Text(
            "clip_grad_norm_ runs on gradients still multiplied by the GradScaler's scale (before "
            "`scaler.unscale_`), so it clips at a threshold thousands of times too small.",
            "clip_grad_norm_ 在仍乘着 GradScaler 缩放系数的梯度上运行（在 `scaler.unscale_` 之前），裁剪阈值实际上小了成千上万倍。",
        ),
        Text("Order of clip and unscale_ calls.", "clip 与 unscale_ 的调用顺序。"),
        Text(
            "Call `scaler.unscale_(optimizer)` before `clip_grad_norm_`.",
            "在 `clip_grad_norm_` 之前调用 `scaler.unscale_(optimizer)`。",
        ),
        threshold=rule(
            Text("any clip call before `scaler.unscale_`", "任何在 `scaler.unscale_` 之前的裁剪调用"),
            "PyTorch AMP docs, Gradient clipping",
        ),
        cause_rank=60,
    ),
)
