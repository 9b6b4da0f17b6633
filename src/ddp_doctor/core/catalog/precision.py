"""Hypothesis `precision` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "precision",
    Text("fp16 loss-scale overflow/underflow, NaN/Inf", "fp16 损失缩放溢出/下溢，NaN/Inf"),
    "fp16-overflow, fp16-no-scaler, nonfinite",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "fp16-overflow",
        "R",
        "warning",
        Text("fp16 loss-scale overflow", "fp16 损失缩放溢出"),
        Text(
            "The GradScaler skips steps and halves its scale repeatedly: gradients overflow float16.",
            "GradScaler 反复跳过优化步并把缩放系数减半：梯度在 float16 中溢出。",
        ),
        Text("Skipped steps and the scale trace.", "被跳过的步以及缩放系数曲线。"),
        Text(
            "Use bf16 where the hardware has it; otherwise lower the lr, clip after unscale_, or lower "
            "init_scale.",
            "硬件支持时改用 bf16；否则降低学习率、在 unscale_ 之后裁剪，或降低 init_scale。",
        ),
        threshold=rule(
            Text(
                "≥ {min_skips:g} and ≥ {min_share:.0%} skipped steps after the start-up back-off (ends at the first good step, step {settle:g} at the latest); or ≥ {min_skips:g} steps, all skipped",
                "启动回退之后（在第一个正常步结束，最迟第 {settle:g} 步）跳过 ≥ {min_skips:g} 步且 ≥ {min_share:.0%}；或至少 {min_skips:g} 步且全部被跳过",
            ),
            "GradScaler backs off from 2^16 in the first steps (AMP docs)",
            min_skips=3,
            min_share=0.01,
            settle=20,
        ),
        log_fields=("loss_scale",),
        cause_rank=110,
    ),
    spec(
        "fp16-no-scaler",
        "RL",
        "error",
        Text("float16 without a GradScaler", "使用 float16 但没有 GradScaler"),
        Text(
            "Training runs under float16 autocast without a GradScaler, so small gradients underflow to "
            "zero and large ones overflow.",
            "在 float16 autocast 下训练却没有 GradScaler，小梯度会下溢为零，大梯度会溢出。",
        ),
        Text("Autocast dtype, and that no scaler was seen.", "autocast 的数据类型，以及未检测到 scaler。"),
        Text(
            "Use `torch.amp.GradScaler` with float16, or switch to bfloat16.",
            "float16 训练时使用 `torch.amp.GradScaler`，或改用 bfloat16。",
        ),
        threshold=rule(
            Text(
                "float16 autocast without an enabled GradScaler", "float16 autocast 且没有启用的 GradScaler"
            ),
            "AMP docs",
        ),
        cause_rank=120,
    ),
    spec(
        "nonfinite",
        "R",
        "error",
        Text("NaN/Inf in loss or gradients", "损失或梯度中出现 NaN/Inf"),
        Text("A NaN or Inf appeared in the loss or in the gradients.", "损失或梯度中出现了 NaN 或 Inf。"),
        Text("First step, rank, and parameter/bucket.", "首次出现的步、rank 以及参数/桶。"),
        Text(
            "Find the first step and rank in the evidence; check the data at that step, the lr, and "
            "fp16 overflow.",
            "根据证据找到首次出现的步和 rank；检查该步的数据、学习率以及 fp16 溢出。",
        ),
        threshold=rule(
            Text("any NaN/Inf not handled by the GradScaler", "任何未被 GradScaler 处理的 NaN/Inf"), "—"
        ),
        log_fields=("loss",),
        symptom=True,
    ),
)
