"""Hypothesis `progress` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "progress",
    Text(
        "Training does not progress at all (zero gradients, lr 0, frozen parameters)",
        "训练根本没有进展（梯度为零、学习率为 0、参数被冻结）",
    ),
    "training-not-progressing",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "training-not-progressing",
        "R",
        "error",
        Text("Training does not progress: nothing is learned", "训练没有进展：模型什么也没学到"),
        Text(
            "The optimizer steps, but the model cannot change: every gradient is exactly zero (e.g. a "
            "cross-entropy over a single class has loss 0), the learning rate is 0 (a scheduler that "
            "decayed to 0 or never left its warmup start), the sampled parameter updates are all zero "
            "(parameters frozen by mistake, or an optimizer built over other tensors than the model's), "
            "or the loss is exactly constant. Whatever the loss curve shows, no training happens.",
            "优化器在步进，但模型无法改变：所有梯度恰好为零（例如只有一个类别的交叉熵损失为 0）、学习率为 0（调度器衰减到 0 "
            "或停留在 warmup 起点）、抽样的参数更新全部为零（参数被误冻结，或优化器持有的不是模型的参数），或损失完全不变。"
            "无论损失曲线如何，都没有在训练。",
        ),
        Text(
            "Per sign, the steps where it holds out of the steps measured: global gradient norm exactly 0, "
            "lr exactly 0, sampled update norms exactly 0, the loss's range; the trainable share of the "
            "model's parameters and the optimizer's parameter count.",
            "每个迹象成立的步数与测量步数：全局梯度范数恰为 0、学习率恰为 0、抽样更新范数恰为 0、损失的取值范围；"
            "模型参数中可训练的比例，以及优化器持有的参数数。",
        ),
        Text(
            "Check the loss on one batch by hand (a single-class cross_entropy is always 0), that "
            "`requires_grad` is True on the parameters you train, that the optimizer is built from "
            "`model.parameters()` of the model you step, and that the lr schedule is not 0.",
            "手动检查一个批次的损失（单类别的 cross_entropy 恒为 0）、要训练的参数 `requires_grad` 为 True、优化器由"
            "你所训练模型的 `model.parameters()` 构建，以及学习率计划不为 0。",
        ),
        threshold=rule(
            Text(
                "a sign holds on ≥ {share:.0%} of ≥ {min_steps:g} measured optimizer steps: gradient norm, lr or "
                "sampled update exactly 0, or the loss's range ≤ {rel_range:g} × its mean magnitude",
                "某迹象在至少 {min_steps:g} 个已测量优化步中的 ≥ {share:.0%} 成立：梯度范数、学习率或抽样更新恰为 0，"
                "或损失的取值范围 ≤ 其平均幅度的 {rel_range:g} 倍",
            ),
            "exact zeros (no tolerance: a learning model never has them); the share and the range are ddp-doctor's choice",
            share=0.9,
            min_steps=10,
            rel_range=1e-7,
        ),
        # a constant loss, lr 0 or a logged gradient norm of 0 (progress.py reads what is there)
        log_fields=("loss",),
    ),
)
