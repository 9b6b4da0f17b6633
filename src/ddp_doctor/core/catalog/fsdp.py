"""Findings of FSDP setups that belong to no hypothesis (the catalog's specs)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, rule, spec

# grouped under no hypothesis: a lint finding, inconclusive at run time
HYPOTHESIS: HypothesisSpec | None = None

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "fsdp-clip-wrong",
        "RL",
        "error",
        Text("Each rank clips by its own shard's norm (FSDP)", "每个 rank 按自己分片的范数裁剪（FSDP）"),
        Text(
            "With sharded gradients a clip must use the norm of the whole gradient. "
            "torch.nn.utils.clip_grad_norm_ on a sharded FSDP1 model, or a hand-written clip over "
            "FSDP2's local shards (`p.grad.to_local()`), sees only this rank's shard, so each rank "
            "clips with a different, too small norm and the update is no longer a scaled gradient.",
            "梯度分片时，裁剪必须使用整个梯度的范数。对分片的 FSDP1 模型调用 torch.nn.utils.clip_grad_norm_，"
            "或在 FSDP2 的本地分片（`p.grad.to_local()`）上手写裁剪，都只能看到本 rank 的分片，每个 rank "
            "按不同且偏小的范数裁剪，更新不再是梯度的缩放。",
        ),
        Text(
            "FSDP1: the clip function, the per-rank clip norms and the full gradient's norm. FSDP2: "
            "each rank's clip coefficient (its gradient norm at optimizer.step() over the norm after "
            "the reduce-scatter), its shard norm, and the coefficient of the full gradient's norm.",
            "FSDP1：裁剪函数、各 rank 的裁剪范数和完整梯度的范数。FSDP2：各 rank 的裁剪系数（optimizer.step() 时的"
            "梯度范数除以 reduce-scatter 之后的范数）、其分片范数，以及按完整梯度范数得到的系数。",
        ),
        Text(
            "FSDP1: call `model.clip_grad_norm_(max_norm)` (the FSDP method), or move to FSDP2. FSDP2: "
            "call `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)` on the DTensor "
            "parameters (it all-reduces the shard norms), not a clip over `to_local()` tensors.",
            "FSDP1：调用 `model.clip_grad_norm_(max_norm)`（FSDP 自带的方法），或改用 FSDP2。FSDP2：在 DTensor "
            "参数上调用 `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`（它会 all-reduce 各分片的范数），"
            "不要在 `to_local()` 得到的张量上裁剪。",
        ),
        threshold=rule(
            Text(
                "FSDP1: `torch.nn.utils.clip_grad_norm_` called on a model with shard_group_size > 1 (run "
                "dirs recorded before the probe named the clip function: inconclusive, the lint rule decides). "
                "FSDP2: at a measured step the ranks' clip coefficients differ by more than {coef_spread:.0%} "
                "(max/min − 1); ruled out when they agree within it at a step where clipping acted "
                "(coefficient < 1 − {coef_spread:.0%}) or where a clip call's total norm is the full gradient's "
                "norm (within {coef_spread:.0%}); agreement without either covers only the measured steps",
                "FSDP1：对 shard_group_size > 1 的模型调用了 `torch.nn.utils.clip_grad_norm_`（探针记录裁剪函数名之前的运行目录："
                "无定论，由 lint 规则判定）。FSDP2：在某个测量步上各 rank 的裁剪系数相差超过 {coef_spread:.0%}（最大/最小 − 1）；"
                "在裁剪生效（系数 < 1 − {coef_spread:.0%}）或裁剪调用的总范数等于完整梯度范数（误差 {coef_spread:.0%} 以内）的某步上"
                "各 rank 系数在此范围内一致则排除；两者都不满足时的一致只覆盖测量过的步",
            ),
            "FSDP1: per-rank shard norms vs the full gradient's norm. FSDP2: a clip by the full norm scales "
            "every rank by one factor (float32 norms agree to ~1e-6); by the shard's norm, by "
            "max_norm/‖shard_r‖ (analysis/checks/fsdp.py)",
            coef_spread=0.01,
        ),
        cause_rank=70,
    ),
)
