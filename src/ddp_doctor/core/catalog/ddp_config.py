"""Hypothesis `ddp-config` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "ddp-config",
    Text(
        "find_unused_parameters, bucket_cap_mb, gradient_as_bucket_view",
        "find_unused_parameters、bucket_cap_mb、gradient_as_bucket_view",
    ),
    "find-unused-true, unused-parameters, ddp-bucket-config",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "find-unused-true",
        "RL",
        "info",
        Text("find_unused_parameters=True", "find_unused_parameters=True"),
        Text(
            "DDP was built with find_unused_parameters=True, which traverses the autograd graph every "
            "step. It costs time, not accuracy.",
            "DDP 使用了 find_unused_parameters=True，每步都要遍历 autograd 图。它影响速度，不影响精度。",
        ),
        Text("The setting.", "该设置的值。"),
        Text(
            "Set `find_unused_parameters=False` unless some parameters really get no gradient.",
            "除非确有参数得不到梯度，否则设置 `find_unused_parameters=False`。",
        ),
        threshold=rule(Text("the recorded setting (info)", "记录的设置（信息）"), "DDP docs"),
        harmless=True,
    ),
    spec(
        "unused-parameters",
        "R",
        "warning",
        Text("Parameters that never receive a gradient", "从未得到梯度的参数"),
        Text("Some trainable parameters never receive a gradient.", "部分可训练参数从未得到梯度。"),
        Text("Parameter names.", "参数名。"),
        Text(
            "Freeze them (`requires_grad_(False)`) or find why the forward skips them.",
            "冻结它们（`requires_grad_(False)`），或查明前向为何跳过了它们。",
        ),
        threshold=rule(
            Text("any name in the last `unused` record", "最后一条 `unused` 记录中有任何参数名"), "—"
        ),
    ),
    spec(
        "ddp-bucket-config",
        "R",
        "info",
        Text("DDP bucket settings", "DDP 桶设置"),
        Text(
            "bucket_cap_mb and gradient_as_bucket_view as set. They change speed and memory, not the "
            "numerics.",
            "bucket_cap_mb 与 gradient_as_bucket_view 的当前设置。它们影响速度与内存，不影响数值。",
        ),
        Text("The values.", "设置值。"),
        Text("Nothing required for stability.", "与稳定性无关，无需修改。"),
        threshold=rule(Text("the recorded setting (info)", "记录的设置（信息）"), "DDP docs"),
        harmless=True,
    ),
)
