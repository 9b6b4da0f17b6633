"""Hypothesis `accumulation-sync` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "accumulation-sync",
    Text("Gradient accumulation fights DDP's gradient sync", "梯度累积与 DDP 的梯度同步冲突"),
    "accum-no-sync-missing, no-sync-after-forward, replica-divergence, accum-uneven, ddp-bypassed, "
    "zero-grad-inside-accum, accum-loss-unscaled",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "accum-loss-unscaled",
        "RL",
        "error",
        Text("Loss not divided by the accumulation count", "损失未除以梯度累积步数"),
        Text(
            "The loss passed to backward is not divided by the number of accumulation steps, so the "
            "gradient (and with plain SGD-like behaviour, the step) is that many times too large.",
            "传给 backward 的损失没有除以梯度累积步数，梯度因此被放大了累积步数倍。",
        ),
        Text(
            "Ratio of the backward root to the loss function's output, and the accumulation count.",
            "backward 根节点与损失函数输出之比，以及累积步数。",
        ),
        Text(
            "Divide the loss by the accumulation count (or by the global number of valid tokens of the "
            "optimizer step) before calling backward.",
            "调用 backward 前把损失除以累积步数（或除以整个优化步内全局有效 token 数）。",
        ),
        threshold=rule(
            Text("median(root/loss) × A ≥ √A", "median(backward 根节点 / 损失) × A ≥ √A"),
            "geometric midpoint of 1/A (divided) and 1 (undivided)",
        ),
        cause_rank=30,
    ),
    spec(
        "zero-grad-inside-accum",
        "RL",
        "error",
        Text("Gradients zeroed inside the accumulation loop", "在梯度累积循环内清零了梯度"),
        Text(
            "Gradients are zeroed between micro-steps of one optimizer step, so only the last "
            "micro-batch contributes to the update.",
            "在同一个优化步的微步之间清零了梯度，因此只有最后一个微批次参与更新。",
        ),
        Text("zero_grad calls per optimizer step.", "每个优化步中 zero_grad 的调用次数。"),
        Text(
            "Call `optimizer.zero_grad()` once per optimizer step, right after `optimizer.step()`.",
            "每个优化步只调用一次 `optimizer.zero_grad()`，放在 `optimizer.step()` 之后。",
        ),
        threshold=rule(
            Text(
                "a zero_grad call after a backward of the same optimizer step (older run dirs: > 1 call "
                "per step) in > {share:.0%} of accumulation steps",
                "超过 {share:.0%} 的累积步中在同一优化步的 backward 之后调用了 zero_grad（旧运行目录：每步多于 1 次）",
            ),
            "count",
            share=0.5,
        ),
        cause_rank=40,
    ),
    spec(
        "accum-no-sync-missing",
        "RL",
        "info",
        Text("Gradients all-reduced on every micro-step", "每个微步都做了梯度 all-reduce"),
        Text(
            "Gradients are all-reduced on every micro-step instead of only the last one. This wastes "
            "bandwidth but is numerically equivalent: it is not the cause of unstable loss.",
            "每个微步都做了梯度 all-reduce，而不是只在最后一步做。这浪费带宽，但数值上等价：它不是损失不稳定的原因。",
        ),
        Text("All-reduces per optimizer step vs micro-steps.", "每个优化步的 all-reduce 次数与微步数。"),
        Text(
            "Wrap non-final micro-steps in `with model.no_sync():` (or set "
            "`model.require_backward_grad_sync = is_last_micro_step` before the forward).",
            "把非最后的微步放进 `with model.no_sync():`（或在前向之前设置 "
            "`model.require_backward_grad_sync = is_last_micro_step`）。",
        ),
        threshold=rule(
            Text(
                "> {share:.0%} of accumulation steps sync on every micro-step",
                "超过 {share:.0%} 的累积步每个微步都同步",
            ),
            "DDP `no_sync` docs",
            share=0.5,
        ),
        harmless=True,
    ),
    spec(
        "no-sync-after-forward",
        "L",
        "error",
        Text("Gradient sync toggled after the forward pass", "在前向之后才切换梯度同步"),
        Text(
            "`require_backward_grad_sync` or `no_sync` is toggled after the forward pass; DDP reads the "
            "flag during forward, so the toggle does not take effect for this micro-step.",
            "在前向之后才切换 `require_backward_grad_sync` 或 `no_sync`；DDP 在前向时读取该标志，因此本微步不会生效。",
        ),
        Text("Line numbers of the forward and of the toggle.", "前向调用与切换语句的行号。"),
        Text(
            "Set `require_backward_grad_sync` (or enter `no_sync()`) before calling the model.",
            "在调用模型之前设置 `require_backward_grad_sync`（或进入 `no_sync()`）。",
        ),
        threshold=rule(
            Text(
                "last micro-step unsynced while another micro-step synced, in > {share:.0%} of steps",
                "超过 {share:.0%} 的步最后一个微步未同步而其他微步同步",
            ),
            "DDP reads the flag in forward",
            share=0.5,
        ),
        cause_rank=20,
    ),
    spec(
        "replica-divergence",
        "R",
        "error",
        Text("Model replicas differ across ranks", "各 rank 的模型副本不一致"),
        Text(
            "Model replicas differ across ranks, although DDP keeps them bit-identical. Each rank is now "
            "training a different model and the averaged gradient no longer matches any of them.",
            "各 rank 的模型副本不一致，而 DDP 本应保持它们逐位相同。每个 rank 实际在训练不同的模型，平均梯度不再对应任何一个。",
        ),
        Text(
            "First optimizer step and parameter where checksums differ.", "校验和首次不同的优化步与参数名。"
        ),
        Text(
            "Do not modify parameters outside DDP on one rank; seed every rank identically before "
            "building the model; let DDP broadcast the initial state.",
            "不要只在某个 rank 上修改参数；构建模型前对所有 rank 使用相同的随机种子；让 DDP 广播初始状态。",
        ),
        threshold=rule(
            Text(
                "any bit difference of the per-parameter int32 checksums", "逐参数 int32 校验和有任何一位不同"
            ),
            "DDP keeps replicas bit-identical",
        ),
        cause_rank=10,
        # an unsynced last micro-step leaves each rank with its own gradient: the replicas step apart
        caused_by=(
            "no-sync-after-forward",
            "ddp-bypassed",
            "fsdp-clip-wrong",
        ),
    ),
    spec(
        "accum-uneven",
        "R",
        "error",
        Text("Ranks run different numbers of steps", "各 rank 的步数不同"),
        Text(
            "Ranks run different numbers of micro-steps or optimizer steps, so collectives pair up "
            "across different steps (or the job hangs at the end).",
            "各 rank 的微步数或优化步数不同，集合通信会错位配对（或在结束时挂起）。",
        ),
        Text("Per-rank counts of micro-steps and optimizer steps.", "各 rank 的微步数与优化步数。"),
        Text(
            "Give every rank the same number of batches (DistributedSampler with drop_last, or the "
            "`join` context manager for uneven inputs).",
            "让每个 rank 处理相同数量的批次（DistributedSampler 配合 drop_last，或使用 `join` 上下文处理不均匀输入）。",
        ),
        threshold=rule(
            Text(
                "any count difference (finished run); > 1 step (run in progress)",
                "计数有任何差异（已结束的运行）；差 1 步以上（进行中的运行）",
            ),
            "count",
        ),
    ),
    spec(
        "ddp-bypassed",
        "R",
        "error",
        Text("Backward ran with no gradient all-reduce", "反向传播时没有梯度 all-reduce"),
        Text(
            "World size > 1 but backward ran with no gradient all-reduce: the raw module was called "
            "instead of the DDP wrapper, or synchronisation was never switched on.",
            "world size 大于 1，但反向传播时没有任何梯度 all-reduce：调用的是原始模块而不是 DDP 包装器，或者同步从未开启。",
        ),
        Text("All-reduce count (0) and optimizer steps.", "all-reduce 次数（为 0）与优化步数。"),
        Text(
            "Call the DDP-wrapped model (`ddp_model(x)`), not `ddp_model.module(x)`, for the forward.",
            "前向时调用 DDP 包装后的模型（`ddp_model(x)`），而不是 `ddp_model.module(x)`。",
        ),
        threshold=rule(
            Text("0 all-reduces with world size > 1", "world size > 1 且 all-reduce 次数为 0"), "count"
        ),
        cause_rank=50,
    ),
)
