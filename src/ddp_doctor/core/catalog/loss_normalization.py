"""Hypothesis `loss-normalization` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "loss-normalization",
    Text("Loss averaged per micro-batch while token counts vary", "按微批次平均损失而 token 数变化"),
    "loss-normalization-variable-tokens, loss-norm-per-rank-tokens",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "loss-normalization-variable-tokens",
        "R",
        "warning",
        Text("Mean loss per micro-batch with varying token counts", "按微批次求平均的损失，而 token 数不同"),
        Text(
            "The loss is mean-reduced per micro-batch while the number of valid tokens varies, so tokens "
            "in short micro-batches weigh more than tokens in long ones; the result differs from the "
            "single-GPU loss over the same data.",
            "损失按微批次求平均，而有效 token 数在变化，短微批次中的 token 权重更大；结果与单卡在相同数据上的损失不同。",
        ),
        Text(
            "Spread of valid-token counts across micro-batches and ranks, implied weight error.",
            "各微批次与各 rank 之间有效 token 数的离散程度，以及由此带来的权重误差。",
        ),
        Text(
            "Sum the per-token loss and divide by the global number of valid tokens of the whole "
            "optimizer step (all micro-steps, all ranks; all-reduce the count).",
            "对逐 token 损失求和，再除以整个优化步（所有微步、所有 rank）的全局有效 token 数（对该计数做 all-reduce）。",
        ),
        threshold=rule(
            Text(
                "token CV > {token_cv:g} and CV(root/loss) < {cv_ratio:g} × CV(root/loss/tokens); without a "
                "loss-function value (a loss reduced by hand) CV(root) < {root_ratio:g} × CV(root/tokens), ruled out "
                "when CV(root/tokens) < {root_ratio:g} × CV(root), else inconclusive",
                "token 数 CV > {token_cv:g} 且 CV(根/损失) < {cv_ratio:g} × CV(根/损失/token)；没有损失函数输出时"
                "（手写归约的损失）CV(根) < {root_ratio:g} × CV(根/token)，CV(根/token) < {root_ratio:g} × CV(根) 时排除，"
                "否则无定论",
            ),
            "analysis/checks/loss_normalization.py",
            token_cv=0.05,
            cv_ratio=0.5,
            root_ratio=0.25,
        ),
        cause_rank=150,
    ),
    spec(
        "loss-norm-per-rank-tokens",
        "R",
        "warning",
        Text("Loss divided by the rank's own token count", "损失除以了本 rank 自己的 token 数"),
        Text(
            "Each rank divides its loss by its own number of valid tokens while the counts differ "
            "across ranks; DDP then averages the ranks' gradients, so a token on a rank with few tokens "
            "weighs more than one on a rank with many, unlike the single-GPU loss over the same data.",
            "每个 rank 用自己的有效 token 数归一化损失，而各 rank 的 token 数不同；DDP 再对各 rank 的梯度求平均，"
            "于是 token 少的 rank 上的 token 权重更大，与单卡在相同数据上的损失不同。",
        ),
        Text(
            "Spread of the ranks' valid-token counts per step, the spread of each rank's loss weight "
            "against it, and the implied weight of a token.",
            "每步各 rank 有效 token 数的离散程度、各 rank 损失权重相对它的离散程度，以及由此得到的 token 权重。",
        ),
        Text(
            "All-reduce the valid-token count of the optimizer step (SUM over ranks and micro-steps) and "
            "divide the summed per-token loss by it, times the world size (DDP averages the gradients).",
            "对整个优化步的有效 token 数做 all-reduce（对所有 rank 与微步求和），用它去除逐 token 损失之和，"
            "再乘以 world size（DDP 会对梯度求平均）。",
        ),
        threshold=rule(
            Text(
                "across ranks, per step: token CV > {token_cv:g} and CV(Σ root/loss) < {cv_ratio:g} × "
                "CV(Σ root/loss / tokens) ({root_ratio:g} from the root alone)",
                "每步在各 rank 之间：token 数 CV > {token_cv:g} 且 CV(Σ 根/损失) < {cv_ratio:g} × "
                "CV(Σ 根/损失 / token)（仅凭根节点时为 {root_ratio:g}）",
            ),
            "analysis/checks/loss_normalization.py; the loss-normalization-variable-tokens margins",
            token_cv=0.05,
            cv_ratio=0.5,
            root_ratio=0.25,
        ),
        cause_rank=145,
    ),
)
