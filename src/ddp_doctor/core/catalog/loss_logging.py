"""Hypothesis `logging` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "logging",
    Text(
        "The plotted loss is rank 0's alone, so it looks noisier than it is",
        "绘制的损失只是 rank 0 的，看起来比实际更嘈杂",
    ),
    "rank0-only-loss-log, oscillation-within-noise",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "rank0-only-loss-log",
        "L",
        "warning",
        Text("Logged loss is rank 0's alone", "记录的损失只是 rank 0 的"),
        Text(
            'The logged "training loss" is rank 0\'s local value, which is noisier than the global loss '
            "by about sqrt(world size) and makes the curve look unstable.",
            "记录的“训练损失”只是 rank 0 的本地值，其噪声约为全局损失的 sqrt(world size) 倍，使曲线看起来不稳定。",
        ),
        Text(
            "Line numbers of the logging call (lint); at run time, the logger and key captured and the "
            "form of the loss its values match (rank 0's micro-batch loss, a running mean, ...).",
            "记录语句的行号（lint）；运行时：捕获到的记录器与键名，以及其数值匹配的损失形式（rank 0 的微批次损失、滑动平均等）。",
        ),
        Text(
            "All-reduce the loss (average over ranks) before logging it.",
            "记录前对损失做 all-reduce（跨 rank 求平均）。",
        ),
        threshold=rule(
            Text(
                "a rank-local form of the loss the probe measured matches ≥ {match_min:.0%} of ≥ {min_points:g} "
                "logged values (within the printed resolution + 0.1%), and no all-reduced form matches > "
                "{distinct_max:.0%}",
                "探针测得的某个 rank 本地损失形式与 ≥ {min_points:g} 个记录值中的 ≥ {match_min:.0%} 一致（在打印精度 + 0.1% 以内），"
                "且没有任何 all-reduce 后的形式一致超过 {distinct_max:.0%}",
            ),
            "logged loss (stdout/stderr, TensorBoard, wandb, HF, Lightning, Fabric, accelerate, trainer "
            "metrics) vs the probe's per-rank losses",
            match_min=0.8,
            min_points=4,
            distinct_max=0.5,
        ),
    ),
)
