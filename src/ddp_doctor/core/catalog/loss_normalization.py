"""Hypothesis `loss-normalization` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "loss-normalization",
    ("Loss averaged per micro-batch while token counts vary", "按微批次平均损失而 token 数变化"),
    "loss-normalization-variable-tokens",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "loss-normalization-variable-tokens",
        "R",
        "warning",
        ("Mean loss per micro-batch with varying token counts", "按微批次求平均的损失，而 token 数不同"),
        (
            "The loss is mean-reduced per micro-batch while the number of valid tokens varies, so tokens "
            "in short micro-batches weigh more than tokens in long ones; the result differs from the "
            "single-GPU loss over the same data.",
            "损失按微批次求平均，而有效 token 数在变化，短微批次中的 token 权重更大；结果与单卡在相同数据上的损失不同。",
        ),
        (
            "Spread of valid-token counts across micro-batches and ranks, implied weight error.",
            "各微批次与各 rank 之间有效 token 数的离散程度，以及由此带来的权重误差。",
        ),
        (
            "Sum the per-token loss and divide by the global number of valid tokens of the whole "
            "optimizer step (all micro-steps, all ranks; all-reduce the count).",
            "对逐 token 损失求和，再除以整个优化步（所有微步、所有 rank）的全局有效 token 数（对该计数做 all-reduce）。",
        ),
        threshold=rule(
            "token CV > {token_cv:g} and CV(root/loss) < {cv_ratio:g} × CV(root/loss/tokens)",
            "token 数 CV > {token_cv:g} 且 CV(根/损失) < {cv_ratio:g} × CV(根/损失/token)",
            "analysis/checks/loss_normalization.py",
            token_cv=0.05,
            cv_ratio=0.5,
        ),
        cause_rank=150,
    ),
)
