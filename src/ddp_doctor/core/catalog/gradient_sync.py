"""Hypothesis `gradient-sync` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "gradient-sync",
    Text(
        "Gradients are not the ranks' average (unsynced parameters, wrong scale)",
        "梯度不是各 rank 的平均（部分参数未同步、缩放错误）",
    ),
    "grads-not-synced, grad-scale-wrong",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "grads-not-synced",
        "R",
        "error",
        Text("Gradients not synchronised for some parameters", "部分参数的梯度未跨 rank 同步"),
        Text(
            "Some parameters are updated with a gradient that differs across ranks: it was never "
            "all-reduced (a module outside the DDP wrapper, `no_sync()` left on for the last "
            "micro-step, a gradient written after the reduction), so their replicas drift apart.",
            "部分参数用各 rank 不同的梯度更新：这些梯度从未被 all-reduce（模块在 DDP 包装之外、最后一个微步仍处于 "
            "`no_sync()` 中、归约后又改写了梯度），因此各副本逐渐分离。",
        ),
        Text(
            "The parameters whose gradient norms differ across ranks just before optimizer.step(), "
            "the first such step, and the steps compared.",
            "optimizer.step() 前梯度范数在各 rank 间不同的参数、首次出现的步，以及比较过的步。",
        ),
        Text(
            "Wrap every trained module in the DDP model (one DDP around the whole model), leave "
            "`no_sync()` only on the micro-steps before the last, and change gradients before "
            "the backward returns (or by a DDP comm hook), not after.",
            "把所有参与训练的模块都放进 DDP（用一个 DDP 包装整个模型），只在最后一个微步之前使用 `no_sync()`，"
            "在 backward 返回前（或用 DDP comm hook）修改梯度，而不是在之后。",
        ),
        threshold=rule(
            Text(
                "a parameter's ‖grad‖ differs across ranks by > {rel_tol:.0e} (relative) at a compared step",
                "在比较的某一步，某参数的 ‖grad‖ 在各 rank 间相差超过 {rel_tol:.0e}（相对）",
            ),
            "DDP's all-reduce leaves the same bits on every rank; the margin allows for norms computed on "
            "different hardware",
            rel_tol=1e-5,
        ),
        cause_rank=20,
    ),
    spec(
        "grad-scale-wrong",
        "R",
        "error",
        Text("Gradient scaled by an integer factor", "梯度被放大或缩小了整数倍"),
        Text(
            "The gradient the optimizer steps on is an integer multiple (or fraction) of the "
            "ranks' average gradient: a second all-reduce with SUM, a `sum` reduction, or a "
            "division by the world size on top of DDP's average. The loss looks the same; the "
            "step is k times too large or too small.",
            "优化器使用的梯度是各 rank 平均梯度的整数倍（或整数分之一）：在 DDP 求平均之后又做了一次 SUM all-reduce、"
            "使用了 `sum` 归约，或又除了一次 world size。损失看起来一样，但步长大了或小了 k 倍。",
        ),
        Text(
            "The median over compared steps of Σ⟨g, p⟩ before optimizer.step() divided by the ranks' "
            "mean local Σ⟨g, p⟩ (÷ the clip coefficient), and the world size.",
            "各比较步上 optimizer.step() 前的 Σ⟨g, p⟩ 与各 rank 本地 Σ⟨g, p⟩ 平均值之比（除以裁剪系数）的中位数，以及 world size。",
        ),
        Text(
            "Let DDP average the gradients once: remove the extra `all_reduce` of `.grad` (or divide "
            "its SUM by the world size), and do not divide again by the world size.",
            "只让 DDP 平均一次梯度：删除对 `.grad` 额外的 `all_reduce`（或把 SUM 结果除以 world size），"
            "也不要再除一次 world size。",
        ),
        threshold=rule(
            Text(
                "median ratio within {int_tol:.0%} of an integer n ≥ 2 or of 1/n; ruled out within "
                "{one_tol:.0%} of 1; a step whose local values cancel (abs(mean) < {min_signal} × mean abs(local)) "
                "is not used",
                "中位比值与某个整数 n ≥ 2 或 1/n 相差在 {int_tol:.0%} 以内；与 1 相差在 {one_tol:.0%} 以内则排除；"
                "本地值相互抵消（abs(平均) < {min_signal} × 平均 abs(本地)）的步不使用",
            ),
            "⟨·, p⟩ is linear and p is the same on every replica: DDP's average gives exactly 1 up to "
            "float32 rounding of the sums",
            int_tol=0.05,
            one_tol=0.02,
            min_signal=0.1,
        ),
        cause_rank=30,
    ),
)
