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
        Text("clip_grad_norm_ on a sharded FSDP1 model", "对分片的 FSDP1 模型使用了 clip_grad_norm_"),
        Text(
            "torch.nn.utils.clip_grad_norm_ on a sharded FSDP1 model sees only this rank's shard, so "
            "each rank clips with a different norm.",
            "对分片的 FSDP1 模型调用 torch.nn.utils.clip_grad_norm_ 只能看到本 rank 的分片，每个 rank 按不同的范数裁剪。",
        ),
        Text("Line or module.", "行号或模块。"),
        Text(
            "Call `model.clip_grad_norm_(max_norm)` (the FSDP method), or move to FSDP2 `fully_shard`.",
            "调用 `model.clip_grad_norm_(max_norm)`（FSDP 自带的方法），或改用 FSDP2 `fully_shard`。",
        ),
        threshold=rule(
            Text(
                "`torch.nn.utils.clip_grad_norm_` called on an FSDP1 model with shard_group_size > 1 (run "
                "dirs recorded before the probe named the clip function: inconclusive, the lint rule decides)",
                "对 shard_group_size > 1 的 FSDP1 模型调用了 `torch.nn.utils.clip_grad_norm_`（探针记录裁剪函数名之前的运行目录："
                "无定论，由 lint 规则判定）",
            ),
            "per-rank shard norms vs the full gradient's norm (analysis/checks/fsdp.py)",
        ),
        cause_rank=70,
    ),
)
