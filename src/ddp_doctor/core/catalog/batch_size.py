"""Hypothesis `batch-size` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "batch-size",
    Text("The effective batch is too small for the model", "有效批量对模型来说太小"),
    "batch-below-noise-scale, oscillation-within-noise",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "oscillation-within-noise",
        "R",
        "info",
        Text("Loss fluctuation is minibatch noise", "损失波动属于小批量噪声"),
        Text(
            "The observed loss fluctuation is within the band expected from minibatch noise at this "
            "effective batch size: this is not a bug.",
            "观察到的损失波动在当前有效批量下小批量噪声的预期范围之内：这不是 bug。",
        ),
        Text("Observed vs predicted step-to-step standard deviation.", "观察到的与预测的逐步标准差。"),
        Text(
            "Nothing to fix. Plot the all-reduced loss or a moving average; raise the batch only if you "
            "need a smoother curve.",
            "无需修复。绘制 all-reduce 后的损失或滑动平均；只有需要更平滑的曲线时才增大批量。",
        ),
        threshold=rule(
            Text(
                "observed / predicted std ≤ {ratio:g} (≥ 63 steps: rolling-median residuals; shorter runs: "
                "second differences, decided only when the 95% χ² interval of the ratio lies on one side of {ratio:g})",
                "观测 / 预测标准差 ≤ {ratio:g}（≥ 63 步：滚动中位数残差；更短的运行：二阶差分，仅当比值的 95% χ² 区间"
                "整体位于 {ratio:g} 一侧时才判定）",
            ),
            "sampling error of the two stds",
            ratio=1.5,
        ),
        harmless=True,
        not_from_logs=Text(
            "the minibatch-noise band needs the spread of the per-micro-batch losses within each step; "
            "a log holds one loss per step",
            "小批量噪声带需要每步内各微批次损失的离散程度；日志每步只有一个损失值",
        ),
    ),
    spec(
        "batch-below-noise-scale",
        "R",
        "info",
        Text("Effective batch far below the gradient noise scale", "有效批量远小于梯度噪声尺度"),
        Text(
            "The effective batch is far below the measured gradient noise scale B_simple, so each step "
            "is dominated by gradient noise (McCandlish et al. 2018).",
            "有效批量远小于测得的梯度噪声尺度 B_simple，每一步都被梯度噪声主导（McCandlish 等，2018）。",
        ),
        Text(
            "B_simple with its uncertainty, and the effective batch.", "B_simple 及其不确定度，以及有效批量。"
        ),
        Text(
            "Raise the effective batch (more accumulation) towards B_simple, or lower the learning rate.",
            "把有效批量（增加梯度累积）提高到接近 B_simple，或降低学习率。",
        ),
        threshold=rule(
            Text(
                "effective batch < B_simple / {far_below:g}, outside 2 standard errors",
                "有效批量 < B_simple / {far_below:g}，且在 2 倍标准误之外",
            ),
            "McCandlish et al. 2018 (B_crit ≈ B_simple)",
            far_below=10,
        ),
        not_from_logs=Text(
            "B_simple needs the local (per-rank) and global gradient norms of each step",
            "B_simple 需要每步的本地（每个 rank）和全局梯度范数",
        ),
    ),
)
