"""Hypothesis `batchnorm` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "batchnorm",
    Text("BatchNorm statistics not synced across ranks", "BatchNorm 统计量未跨 rank 同步"),
    "batchnorm-unsynced",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "batchnorm-unsynced",
        "RL",
        "warning",
        Text("BatchNorm statistics not synced", "BatchNorm 统计量未跨 rank 同步"),
        Text(
            "BatchNorm layers under DDP without SyncBatchNorm compute statistics on the local "
            "micro-batch only.",
            "DDP 下的 BatchNorm 层没有使用 SyncBatchNorm，只在本地微批次上计算统计量。",
        ),
        Text("Module names.", "模块名。"),
        Text(
            "Convert with `torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)` before wrapping in DDP.",
            "在 DDP 包装前用 `torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)` 转换。",
        ),
        threshold=rule(
            Text("any non-Sync BatchNorm under DDP", "DDP 下有任何非 SyncBatchNorm 的 BatchNorm"),
            "SyncBatchNorm docs",
        ),
        cause_rank=160,
    ),
)
