"""Hypothesis `optimizer` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "optimizer",
    Text("Adam epsilon / beta2 / optimizer-state start-up", "Adam 的 epsilon / beta2 / 优化器状态启动"),
    "adam-eps-dominated, update-ratio-high",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "adam-eps-dominated",
        "R",
        "warning",
        Text("Adam epsilon dominates the update", "Adam 的 epsilon 主导了更新"),
        Text(
            "A large share of Adam's second-moment entries are below eps², so eps, not the gradient, "
            "sets the step size for those entries.",
            "Adam 二阶矩中有很大比例小于 eps²，这些元素的步长由 eps 而不是梯度决定。",
        ),
        Text(
            "Share of entries below eps² per parameter group, and eps.",
            "各参数组中小于 eps² 的比例，以及 eps。",
        ),
        Text(
            "Lower Adam's eps (e.g. 1e-8 → 1e-10 or below) for the affected groups.",
            "降低受影响参数组的 Adam eps（例如从 1e-8 降到 1e-10 或更低）。",
        ),
        threshold=rule(
            Text("median share of v̂ < eps² > {share:g}", "v̂ < eps² 的比例中位数 > {share:g}"),
            "ddp-doctor's choice",
            share=0.25,
        ),
        cause_rank=180,
    ),
)
