"""Hypothesis `compile` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "compile",
    Text("torch.compile interacts badly with DDP", "torch.compile 与 DDP 相互干扰"),
    "compile-numerics, compile-before-ddp",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "compile-numerics",
        "R",
        "warning",
        Text("Compiled forward differs from eager", "编译后的前向与 eager 不一致"),
        Text(
            "The torch.compile'd forward differs from eager beyond the eager run-to-run noise.",
            "torch.compile 编译后的前向结果与 eager 的差异超出了 eager 自身多次运行的噪声。",
        ),
        Text(
            "Max abs/rel difference vs the eager baseline noise.", "相对于 eager 基准噪声的最大绝对/相对差。"
        ),
        Text(
            "Report the difference upstream; train with `compile` off for the affected module.",
            "向上游报告该差异；对受影响的模块关闭 compile 训练。",
        ),
        threshold=rule(
            Text(
                "max_abs > max({noise_factor:g} × eager noise, {atol:g})",
                "max_abs > max({noise_factor:g} × eager 噪声, {atol:g})",
            ),
            "`torch._dynamo.utils.same` default tol 1e-4",
            noise_factor=10.0,
            atol=1e-4,
        ),
        cause_rank=170,
    ),
    spec(
        "compile-before-ddp",
        "L",
        "info",
        Text("torch.compile applied before DDP", "在 DDP 包装之前调用了 torch.compile"),
        Text(
            "torch.compile is applied before DDP wrapping. Both orders are supported; this is informational.",
            "在 DDP 包装之前调用了 torch.compile。两种顺序都受支持；仅供参考。",
        ),
        Text("Line numbers.", "行号。"),
        Text(
            "Nothing required. Compiling the DDP-wrapped model lets DDPOptimizer split graphs at bucket "
            "boundaries.",
            "无需修改。对 DDP 包装后的模型编译可以让 DDPOptimizer 按桶边界切分计算图。",
        ),
        threshold=rule(Text("the recorded order (info)", "记录的顺序（信息）"), "DDP docs"),
        harmless=True,
    ),
)
