"""The catalog: every hypothesis users ask about and every finding ddp-doctor can measure.

This module is the spine of ddp-doctor. Runtime checks, lint rules and experiments all emit
findings whose ``id`` is a key of :data:`FINDINGS`; the report groups them under the
hypotheses of :data:`HYPOTHESES`. IDs are a public contract (see docs/catalog.md): never rename
one, only add.

Text is kept in English and Chinese side by side so that a renderer can show either.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")


class Text(str):
    """A string in every supported language: catalog texts, finding and verdict summaries.

    A Text *is* its English string (``str`` subclass), so code that logs, compares or searches a
    summary keeps working; renderers ask for a language with :meth:`get`, which falls back to
    English where no translation was written.
    """

    zh: str

    def __new__(cls, en: str, zh: str = "") -> Text:
        text = super().__new__(cls, en)
        text.zh = zh
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (Text, (self.en, self.zh))

    @property
    def en(self) -> str:
        return str.__str__(self)

    def get(self, lang: Lang = "en") -> str:
        return self.zh if lang == "zh" and self.zh else self.en

    def joining(self, parts: Iterable[Text], sep: Text) -> Text:
        """``self`` followed by ``parts`` separated by ``sep``, language by language."""
        items = list(parts)
        return Text(
            self.en + sep.en.join(p.en for p in items),
            self.get("zh") + sep.get("zh").join(p.get("zh") for p in items),
        )

    def __add__(self, other: str) -> Text:
        if isinstance(other, Text):
            return Text(self.en + other.en, self.get("zh") + other.get("zh"))
        return Text(self.en + other, self.get("zh") + other)


@dataclass(frozen=True)
class Threshold:
    """When a finding is confirmed: the rule, its source, and the numbers the check uses.

    ``rule`` is a format string over ``values`` ("> {share:.0%} of steps ...") in both languages,
    so the sentence in
    the docs and in a finding's evidence and the constant in the check are one definition:
    checks read the numbers with :func:`limit`.
    """

    rule: Text
    source: str
    values: Mapping[str, float] = field(default_factory=dict)

    def text(self, lang: Lang = "en") -> str:
        return self.rule.get(lang).format(**self.values)


@dataclass(frozen=True)
class FindingSpec:
    """What one finding ID means, which evidence it carries and how to fix it."""

    id: str
    runtime: bool  # produced by `ddp-doctor run` + `report`
    lint: bool  # produced by `ddp-doctor lint`
    severity: Severity  # severity when confirmed
    title: Text
    meaning: Text
    evidence: Text  # which numbers a finding of this ID must carry
    fix: Text
    threshold: Threshold | None = None
    # confirmed but not a cause of instability ("set, but numerically harmless", "this is just
    # noise"): its hypothesis counts it as absent (analysis/diagnose.py verdict)
    harmless: bool = False
    # the logged fields an imported log must hold for this finding (rundir/sources: `imported.fields`);
    # None: only `ddp-doctor run` measures it (analysis/reduced.py)
    log_fields: tuple[str, ...] | None = None
    # why a log cannot feed it, when that is more than "the logs hold only ..."
    not_from_logs: Text | None = None


@dataclass(frozen=True)
class HypothesisSpec:
    """One guess from the forum thread and the findings that decide it."""

    id: str
    guess: Text
    findings: tuple[str, ...]


def _f(
    id: str,
    kinds: str,
    severity: Severity,
    title: tuple[str, str],
    meaning: tuple[str, str],
    evidence: tuple[str, str],
    fix: tuple[str, str],
    threshold: Threshold | None = None,
    harmless: bool = False,
    log_fields: tuple[str, ...] | None = None,
    not_from_logs: Text | None = None,
) -> FindingSpec:
    return FindingSpec(
        id=id,
        runtime="R" in kinds,
        lint="L" in kinds,
        severity=severity,
        title=Text(*title),
        meaning=Text(*meaning),
        evidence=Text(*evidence),
        fix=Text(*fix),
        threshold=threshold,
        harmless=harmless,
        log_fields=log_fields,
        not_from_logs=not_from_logs,
    )


def _t(rule: str, rule_zh: str, source: str, **values: float) -> Threshold:
    return Threshold(Text(rule, rule_zh), source, values)


_FINDING_LIST: tuple[FindingSpec, ...] = (
    _f(
        "sampler-missing",
        "RL",
        "error",
        ("Ranks read the same data", "各 rank 读取相同的数据"),
        (
            "Ranks read the same samples: there is no DistributedSampler or equivalent sharding, so "
            "the effective batch holds duplicates and data parallelism adds no new data.",
            "各 rank 读到相同的样本：没有使用 DistributedSampler 或等价的分片方式，因此有效批次中全是重复样本，"
            "数据并行没有带来新的数据。",
        ),
        ("Fraction of micro-batches identical across ranks.", "各 rank 之间完全相同的微批次所占比例。"),
        (
            "Pass `sampler=DistributedSampler(dataset)` to the DataLoader (or shard by rank) and call "
            "`sampler.set_epoch(epoch)` at the start of every epoch.",
            "给 DataLoader 传入 `sampler=DistributedSampler(dataset)`（或按 rank 分片），并在每个 epoch 开始时调用 "
            "`sampler.set_epoch(epoch)`。",
        ),
        threshold=_t(
            "> {share:.0%} of micro-batches identical to the lowest rank's at the same (step, micro-step)",
            "超过 {share:.0%} 的微批次与最低 rank 在同一（步，微步）完全相同",
            "docs/probe.md (measured facts): 32/32 identical without a sampler, 0/16 with",
            share=0.5,
        ),
    ),
    _f(
        "set-epoch-missing",
        "RL",
        "warning",
        ("DistributedSampler order repeats every epoch", "DistributedSampler 每个 epoch 顺序相同"),
        (
            "DistributedSampler shuffles, but set_epoch is never called, so every epoch visits the "
            "samples in exactly the same order.",
            "DistributedSampler 开启了 shuffle，但从未调用 set_epoch，因此每个 epoch 的样本顺序完全相同。",
        ),
        ("Epochs seen and whether the index order repeated.", "观察到的 epoch 数以及索引顺序是否重复。"),
        (
            "Call `sampler.set_epoch(epoch)` before iterating the DataLoader in each epoch.",
            "在每个 epoch 遍历 DataLoader 之前调用 `sampler.set_epoch(epoch)`。",
        ),
        threshold=_t(
            "at one epoch value, the index order repeated in more than half of the consecutive training "
            "iterations of the sampler that feeds the optimizer steps; at several epoch values, the order "
            "unchanged across different values in more than half (≥ 2 iterations; peeks that fed no step set aside)",
            "只有一个 epoch 值时：为优化步提供数据的 sampler 的相邻训练迭代中超过一半索引顺序相同；有多个 epoch 值时："
            "epoch 值不同的相邻训练迭代中超过一半顺序未变（至少 2 次；未为任何优化步提供数据的预取迭代不计入）",
            "DistributedSampler docs (set_epoch seeds the shuffle)",
        ),
    ),
    _f(
        "rank-data-skew",
        "R",
        "warning",
        ("One rank's data differs persistently", "某个 rank 的数据持续偏离"),
        (
            "One rank's loss or gradient norm differs persistently from the other ranks', which points "
            "at skewed shards (sorted data, one rank with the long documents, a bad file).",
            "某个 rank 的损失或梯度范数持续与其他 rank 不同，说明数据分片有偏（数据已排序、长文档集中在一个 rank、"
            "某个文件有问题）。",
        ),
        (
            "Per-rank means and the test statistic with its p-value.",
            "各 rank 的均值，以及检验统计量和 p 值。",
        ),
        (
            "Shuffle before sharding; check that each rank's shard is drawn from the same distribution.",
            "先打乱再分片；检查每个 rank 的分片是否来自同一分布。",
        ),
        threshold=_t(
            "p < {alpha:g} (Bonferroni over ranks) and shift > {min_shift:.0%}",
            "Bonferroni 校正后 p < {alpha:g} 且偏移超过 {min_shift:.0%}",
            "batch-means t-test (analysis/quantities/skew.py)",
            alpha=1e-3,
            min_shift=0.02,
        ),
    ),
    _f(
        "accum-loss-unscaled",
        "RL",
        "error",
        ("Loss not divided by the accumulation count", "损失未除以梯度累积步数"),
        (
            "The loss passed to backward is not divided by the number of accumulation steps, so the "
            "gradient (and with plain SGD-like behaviour, the step) is that many times too large.",
            "传给 backward 的损失没有除以梯度累积步数，梯度因此被放大了累积步数倍。",
        ),
        (
            "Ratio of the backward root to the loss function's output, and the accumulation count.",
            "backward 根节点与损失函数输出之比，以及累积步数。",
        ),
        (
            "Divide the loss by the accumulation count (or by the global number of valid tokens of the "
            "optimizer step) before calling backward.",
            "调用 backward 前把损失除以累积步数（或除以整个优化步内全局有效 token 数）。",
        ),
        threshold=_t(
            "median(root/loss) × A ≥ √A",
            "median(backward 根节点 / 损失) × A ≥ √A",
            "geometric midpoint of 1/A (divided) and 1 (undivided)",
        ),
    ),
    _f(
        "zero-grad-inside-accum",
        "RL",
        "error",
        ("Gradients zeroed inside the accumulation loop", "在梯度累积循环内清零了梯度"),
        (
            "Gradients are zeroed between micro-steps of one optimizer step, so only the last "
            "micro-batch contributes to the update.",
            "在同一个优化步的微步之间清零了梯度，因此只有最后一个微批次参与更新。",
        ),
        ("zero_grad calls per optimizer step.", "每个优化步中 zero_grad 的调用次数。"),
        (
            "Call `optimizer.zero_grad()` once per optimizer step, right after `optimizer.step()`.",
            "每个优化步只调用一次 `optimizer.zero_grad()`，放在 `optimizer.step()` 之后。",
        ),
        threshold=_t(
            "a zero_grad call after a backward of the same optimizer step (older run dirs: > 1 call "
            "per step) in > {share:.0%} of accumulation steps",
            "超过 {share:.0%} 的累积步中在同一优化步的 backward 之后调用了 zero_grad（旧运行目录：每步多于 1 次）",
            "count",
            share=0.5,
        ),
    ),
    _f(
        "accum-no-sync-missing",
        "RL",
        "info",
        ("Gradients all-reduced on every micro-step", "每个微步都做了梯度 all-reduce"),
        (
            "Gradients are all-reduced on every micro-step instead of only the last one. This wastes "
            "bandwidth but is numerically equivalent: it is not the cause of unstable loss.",
            "每个微步都做了梯度 all-reduce，而不是只在最后一步做。这浪费带宽，但数值上等价：它不是损失不稳定的原因。",
        ),
        ("All-reduces per optimizer step vs micro-steps.", "每个优化步的 all-reduce 次数与微步数。"),
        (
            "Wrap non-final micro-steps in `with model.no_sync():` (or set "
            "`model.require_backward_grad_sync = is_last_micro_step` before the forward).",
            "把非最后的微步放进 `with model.no_sync():`（或在前向之前设置 "
            "`model.require_backward_grad_sync = is_last_micro_step`）。",
        ),
        threshold=_t(
            "> {share:.0%} of accumulation steps sync on every micro-step",
            "超过 {share:.0%} 的累积步每个微步都同步",
            "DDP `no_sync` docs",
            share=0.5,
        ),
        harmless=True,
    ),
    _f(
        "no-sync-after-forward",
        "L",
        "error",
        ("Gradient sync toggled after the forward pass", "在前向之后才切换梯度同步"),
        (
            "`require_backward_grad_sync` or `no_sync` is toggled after the forward pass; DDP reads the "
            "flag during forward, so the toggle does not take effect for this micro-step.",
            "在前向之后才切换 `require_backward_grad_sync` 或 `no_sync`；DDP 在前向时读取该标志，因此本微步不会生效。",
        ),
        ("Line numbers of the forward and of the toggle.", "前向调用与切换语句的行号。"),
        (
            "Set `require_backward_grad_sync` (or enter `no_sync()`) before calling the model.",
            "在调用模型之前设置 `require_backward_grad_sync`（或进入 `no_sync()`）。",
        ),
        threshold=_t(
            "last micro-step unsynced while another micro-step synced, in > {share:.0%} of steps",
            "超过 {share:.0%} 的步最后一个微步未同步而其他微步同步",
            "DDP reads the flag in forward",
            share=0.5,
        ),
    ),
    _f(
        "replica-divergence",
        "R",
        "error",
        ("Model replicas differ across ranks", "各 rank 的模型副本不一致"),
        (
            "Model replicas differ across ranks, although DDP keeps them bit-identical. Each rank is now "
            "training a different model and the averaged gradient no longer matches any of them.",
            "各 rank 的模型副本不一致，而 DDP 本应保持它们逐位相同。每个 rank 实际在训练不同的模型，平均梯度不再对应任何一个。",
        ),
        ("First optimizer step and parameter where checksums differ.", "校验和首次不同的优化步与参数名。"),
        (
            "Do not modify parameters outside DDP on one rank; seed every rank identically before "
            "building the model; let DDP broadcast the initial state.",
            "不要只在某个 rank 上修改参数；构建模型前对所有 rank 使用相同的随机种子；让 DDP 广播初始状态。",
        ),
        threshold=_t(
            "any bit difference of the per-parameter int32 checksums",
            "逐参数 int32 校验和有任何一位不同",
            "DDP keeps replicas bit-identical",
        ),
    ),
    _f(
        "accum-uneven",
        "R",
        "error",
        ("Ranks run different numbers of steps", "各 rank 的步数不同"),
        (
            "Ranks run different numbers of micro-steps or optimizer steps, so collectives pair up "
            "across different steps (or the job hangs at the end).",
            "各 rank 的微步数或优化步数不同，集合通信会错位配对（或在结束时挂起）。",
        ),
        ("Per-rank counts of micro-steps and optimizer steps.", "各 rank 的微步数与优化步数。"),
        (
            "Give every rank the same number of batches (DistributedSampler with drop_last, or the "
            "`join` context manager for uneven inputs).",
            "让每个 rank 处理相同数量的批次（DistributedSampler 配合 drop_last，或使用 `join` 上下文处理不均匀输入）。",
        ),
        threshold=_t(
            "any count difference (finished run); > 1 step (run in progress)",
            "计数有任何差异（已结束的运行）；差 1 步以上（进行中的运行）",
            "count",
        ),
    ),
    _f(
        "ddp-bypassed",
        "R",
        "error",
        ("Backward ran with no gradient all-reduce", "反向传播时没有梯度 all-reduce"),
        (
            "World size > 1 but backward ran with no gradient all-reduce: the raw module was called "
            "instead of the DDP wrapper, or synchronisation was never switched on.",
            "world size 大于 1，但反向传播时没有任何梯度 all-reduce：调用的是原始模块而不是 DDP 包装器，或者同步从未开启。",
        ),
        ("All-reduce count (0) and optimizer steps.", "all-reduce 次数（为 0）与优化步数。"),
        (
            "Call the DDP-wrapped model (`ddp_model(x)`), not `ddp_model.module(x)`, for the forward.",
            "前向时调用 DDP 包装后的模型（`ddp_model(x)`），而不是 `ddp_model.module(x)`。",
        ),
        threshold=_t("0 all-reduces with world size > 1", "world size > 1 且 all-reduce 次数为 0", "count"),
    ),
    _f(
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
        threshold=_t(
            "token CV > {token_cv:g} and CV(root/loss) < {cv_ratio:g} × CV(root/loss/tokens)",
            "token 数 CV > {token_cv:g} 且 CV(根/损失) < {cv_ratio:g} × CV(根/损失/token)",
            "analysis/checks/loss_normalization.py",
            token_cv=0.05,
            cv_ratio=0.5,
            root_ratio=0.25,
        ),
    ),
    _f(
        "loss-norm-per-rank-tokens",
        "R",
        "warning",
        ("Loss divided by the rank's own token count", "损失除以了本 rank 自己的 token 数"),
        (
            "Each rank divides its loss by its own number of valid tokens while the counts differ "
            "across ranks; DDP then averages the ranks' gradients, so a token on a rank with few tokens "
            "weighs more than one on a rank with many, unlike the single-GPU loss over the same data.",
            "每个 rank 用自己的有效 token 数归一化损失，而各 rank 的 token 数不同；DDP 再对各 rank 的梯度求平均，"
            "于是 token 少的 rank 上的 token 权重更大，与单卡在相同数据上的损失不同。",
        ),
        (
            "Spread of the ranks' valid-token counts per step, the spread of each rank's loss weight "
            "against it, and the implied weight of a token.",
            "每步各 rank 有效 token 数的离散程度、各 rank 损失权重相对它的离散程度，以及由此得到的 token 权重。",
        ),
        (
            "All-reduce the valid-token count of the optimizer step (SUM over ranks and micro-steps) and "
            "divide the summed per-token loss by it, times the world size (DDP averages the gradients).",
            "对整个优化步的有效 token 数做 all-reduce（对所有 rank 与微步求和），用它去除逐 token 损失之和，"
            "再乘以 world size（DDP 会对梯度求平均）。",
        ),
        threshold=_t(
            "across ranks, per step: token CV > {token_cv:g} and CV(Σ root/loss) < {cv_ratio:g} × "
            "CV(Σ root/loss / tokens) ({root_ratio:g} from the root alone)",
            "每步在各 rank 之间：token 数 CV > {token_cv:g} 且 CV(Σ 根/损失) < {cv_ratio:g} × "
            "CV(Σ 根/损失 / token)（仅凭根节点时为 {root_ratio:g}）",
            "analysis/checks/loss_normalization.py; the loss-normalization-variable-tokens margins",
            token_cv=0.05,
            cv_ratio=0.5,
            root_ratio=0.25,
        ),
    ),
    _f(
        "rank0-only-loss-log",
        "L",
        "warning",
        ("Logged loss is rank 0's alone", "记录的损失只是 rank 0 的"),
        (
            'The logged "training loss" is rank 0\'s local value, which is noisier than the global loss '
            "by about sqrt(world size) and makes the curve look unstable.",
            "记录的“训练损失”只是 rank 0 的本地值，其噪声约为全局损失的 sqrt(world size) 倍，使曲线看起来不稳定。",
        ),
        (
            "Line numbers of the logging call (lint); at run time, the logger and key captured and the "
            "form of the loss its values match (rank 0's micro-batch loss, a running mean, ...).",
            "记录语句的行号（lint）；运行时：捕获到的记录器与键名，以及其数值匹配的损失形式（rank 0 的微批次损失、滑动平均等）。",
        ),
        (
            "All-reduce the loss (average over ranks) before logging it.",
            "记录前对损失做 all-reduce（跨 rank 求平均）。",
        ),
        threshold=_t(
            "a rank-local form of the loss the probe measured matches ≥ {match_min:.0%} of ≥ {min_points:g} "
            "logged values (within the printed resolution + 0.1%), and no all-reduced form matches > "
            "{distinct_max:.0%}",
            "探针测得的某个 rank 本地损失形式与 ≥ {min_points:g} 个记录值中的 ≥ {match_min:.0%} 一致（在打印精度 + 0.1% 以内），"
            "且没有任何 all-reduce 后的形式一致超过 {distinct_max:.0%}",
            "logged loss (stdout/stderr, TensorBoard, wandb, HF, Lightning, Fabric, accelerate, trainer "
            "metrics) vs the probe's per-rank losses",
            match_min=0.8,
            min_points=4,
            distinct_max=0.5,
        ),
    ),
    _f(
        "oscillation-within-noise",
        "R",
        "info",
        ("Loss fluctuation is minibatch noise", "损失波动属于小批量噪声"),
        (
            "The observed loss fluctuation is within the band expected from minibatch noise at this "
            "effective batch size: this is not a bug.",
            "观察到的损失波动在当前有效批量下小批量噪声的预期范围之内：这不是 bug。",
        ),
        ("Observed vs predicted step-to-step standard deviation.", "观察到的与预测的逐步标准差。"),
        (
            "Nothing to fix. Plot the all-reduced loss or a moving average; raise the batch only if you "
            "need a smoother curve.",
            "无需修复。绘制 all-reduce 后的损失或滑动平均；只有需要更平滑的曲线时才增大批量。",
        ),
        threshold=_t(
            "observed / predicted std ≤ {ratio:g} (≥ 63 steps: rolling-median residuals; shorter runs: "
            "second differences, decided only when the 95% χ² interval of the ratio lies on one side of {ratio:g})",
            "观测 / 预测标准差 ≤ {ratio:g}（≥ 63 步：滚动中位数残差；更短的运行：二阶差分，仅当比值的 95% χ² 区间"
            "整体位于 {ratio:g} 一侧时才判定）",
            "sampling error of the two stds",
            ratio=1.5,
        ),
        harmless=True,
        not_from_logs=Text(
            "the minibatch-noise band needs the spread of the per-micro-batch losses within each step; "
            "a log holds one loss per step",
            "小批量噪声带需要每步内各微批次损失的离散程度；日志每步只有一个损失值",
        ),
    ),
    _f(
        "batch-below-noise-scale",
        "R",
        "info",
        ("Effective batch far below the gradient noise scale", "有效批量远小于梯度噪声尺度"),
        (
            "The effective batch is far below the measured gradient noise scale B_simple, so each step "
            "is dominated by gradient noise (McCandlish et al. 2018).",
            "有效批量远小于测得的梯度噪声尺度 B_simple，每一步都被梯度噪声主导（McCandlish 等，2018）。",
        ),
        ("B_simple with its uncertainty, and the effective batch.", "B_simple 及其不确定度，以及有效批量。"),
        (
            "Raise the effective batch (more accumulation) towards B_simple, or lower the learning rate.",
            "把有效批量（增加梯度累积）提高到接近 B_simple，或降低学习率。",
        ),
        threshold=_t(
            "effective batch < B_simple / {far_below:g}, outside 2 standard errors",
            "有效批量 < B_simple / {far_below:g}，且在 2 倍标准误之外",
            "McCandlish et al. 2018 (B_crit ≈ B_simple)",
            far_below=10,
        ),
        not_from_logs=Text(
            "B_simple needs the local (per-rank) and global gradient norms of each step",
            "B_simple 需要每步的本地（每个 rank）和全局梯度范数",
        ),
    ),
    _f(
        "scheduler-per-microstep",
        "RL",
        "warning",
        ("LR scheduler stepped per micro-batch", "学习率调度器按微批次步进"),
        (
            "The learning-rate scheduler is stepped once per micro-batch instead of once per optimizer "
            "step, so warmup ends (and decay runs) accumulation-count times too early.",
            "学习率调度器在每个微批次都步进，而不是每个优化步一次，因此 warmup 提前结束（衰减也提前）了累积步数倍。",
        ),
        ("Scheduler steps per optimizer step, and the lr trace.", "每个优化步的调度器步数，以及学习率曲线。"),
        (
            "Call `scheduler.step()` next to `optimizer.step()`, once per optimizer step.",
            "把 `scheduler.step()` 放在 `optimizer.step()` 旁边，每个优化步调用一次。",
        ),
        threshold=_t(
            "scheduler steps = micro-steps × k in > {share:.0%} of steps with ≥ 2 micro-steps; k = 1, or k = world size when accelerate's `AcceleratedScheduler` (split_batches=False) made the call",
            "在至少 2 个微步的步中，超过 {share:.0%} 的调度器步数 = 微步数 × k；k = 1，若调用来自 accelerate 的 `AcceleratedScheduler`（split_batches=False）则 k = world size",
            "count; accelerate steps the wrapped scheduler num_processes times per optimizer step on purpose",
            share=0.5,
        ),
    ),
    _f(
        "warmup-short",
        "R",
        "warning",
        ("Warmup too short", "warmup 太短"),
        (
            "Warmup ends within the window where the loss spikes start, or is shorter than the "
            "documented minimum for Adam-type optimizers (about 2/(1-beta2) steps, Ma & Yarats 2021).",
            "warmup 在损失开始出现尖峰的窗口内结束，或短于 Adam 类优化器的建议最小值（约 2/(1-beta2) 步，Ma & Yarats 2021）。",
        ),
        ("Warmup length in optimizer steps, spike steps.", "以优化步计的 warmup 长度，以及尖峰所在步。"),
        (
            "Lengthen the warmup to at least 2/(1-beta2) optimizer steps.",
            "把 warmup 延长到至少 2/(1-beta2) 个优化步。",
        ),
        threshold=_t(
            "spike within max({min_window:g}, warmup/2) steps of warmup end (when there is a warmup), or, for an "
            "Adam-type optimizer (one with β2), warmup < 2/(1−β2) with a spike before that",
            "尖峰出现在 warmup 结束前后 max({min_window:g}, warmup/2) 步内（存在 warmup 时），或对 Adam 类优化器（有 β2）："
            "warmup < 2/(1−β2) 且尖峰出现在此之前",
            "Ma & Yarats 2021, On the adequacy of untuned warmup for adaptive optimization",
            min_window=10,
        ),
        log_fields=("loss", "lr"),
    ),
    _f(
        "update-ratio-high",
        "R",
        "warning",
        ("Update/parameter ratio too high", "更新量与参数之比过高"),
        (
            "The per-layer-group ratio ||update|| / ||parameter|| is far above the usual range "
            "(around 1e-3 per step), so the learning rate is too high for those layers.",
            "按层组计算的 ||更新量|| / ||参数|| 远高于通常范围（每步约 1e-3），这些层的学习率过高。",
        ),
        (
            "Ratio per layer group, and which groups exceed the threshold.",
            "各层组的比值，以及超过阈值的层组。",
        ),
        (
            "Lower the learning rate (or use a per-group lr for the affected groups).",
            "降低学习率（或为受影响的层组设置单独的学习率）。",
        ),
        threshold=_t(
            "median ‖update‖/‖param‖ over sampled steps ≥ {early_steps:g} above: norm gains {norm:g}, "
            "embeddings/matrices/vectors {matrix:g} (biases not judged; ≤ 2 tensors per type sampled every "
            "5 steps, level full all groups)",
            "第 {early_steps:g} 步之后采样步上 ‖更新‖/‖参数‖ 的中位数高于：归一化增益 {norm:g}，嵌入/矩阵/向量 {matrix:g}"
            "（不判断偏置）",
            "CS231n (~1e-3 usual) × 10 for norm gains (init 1: the ratio reads Adam's step size); init-scale "
            "allowance for std-0.02 tensors, calibrated on healthy from-scratch runs (embeddings 0.011–0.04) "
            "vs lr 100× (norms 0.02–0.23); see quantities/update_ratio.py",
            norm=1e-2,
            matrix=1e-1,
            early_steps=10,
        ),
    ),
    _f(
        "loss-unstable",
        "R",
        "warning",
        (
            "Loss unstable: above its starting level or oscillating far beyond noise",
            "损失不稳定：高于初始水平或波动远超噪声",
        ),
        (
            "The global loss rose above its value at the first step and stayed there for many steps, "
            "or its step-to-step fluctuation is far above the minibatch-noise band: training is "
            "unstable, most often because the learning rate is too high for this model and warmup "
            '(Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer training '
            'instabilities").',
            "全局损失升到第一步的水平之上并持续多步，或其逐步波动远超小批量噪声带：训练不稳定，最常见的原因是学习率"
            "对该模型和 warmup 而言过高（Wortsman 等，2023，“Small-scale proxies for large-scale Transformer "
            "training instabilities”）。",
        ),
        (
            "Initial loss, the longest run of steps above it and its margin; observed/predicted "
            "step-to-step std with its confidence interval.",
            "初始损失、高于它的最长连续步数及其阈值；观测/预测逐步标准差之比及其置信区间。",
        ),
        (
            "Lower the learning rate (try 3–10× lower) and add a warmup of a few hundred steps; clip "
            "gradients (`clip_grad_norm_(params, 1.0)`).",
            "降低学习率（先试 3–10 倍）并加入几百步的 warmup；做梯度裁剪（`clip_grad_norm_(params, 1.0)`）。",
        ),
        threshold=_t(
            "≥ max({min_run:g}, {min_share:.0%} of the steps) consecutive steps above the initial loss + "
            "max({rel_rise:.0%}, {noise_z:g} σ_pred); or the observed/predicted step-to-step std's 95% "
            "interval above {far_above:g}",
            "≥ max({min_run:g}, 步数的 {min_share:.0%}) 个连续步高于初始损失 + max({rel_rise:.0%}, {noise_z:g} σ_pred)；"
            "或观测/预测逐步标准差之比的 95% 区间高于 {far_above:g}",
            "the lr-too-high divergence of Wortsman et al. 2023 (small-scale proxies); margins are ddp-doctor's choice",
            min_run=5,
            min_share=0.10,
            rel_rise=0.10,
            noise_z=3.0,
            far_above=3.0,
        ),
    ),
    _f(
        "loss-spike",
        "R",
        "warning",
        ("Loss spikes", "损失尖峰"),
        (
            "The loss spikes: steps whose loss lies far above the rolling median by a robust "
            "(median/MAD) rule.",
            "损失出现尖峰：按稳健（中位数/MAD）规则，某些步的损失远高于滚动中位数。",
        ),
        ("Spike steps and magnitudes.", "尖峰所在步及幅度。"),
        (
            "Look at the grad-spike, warmup and lr findings for the cause; clip gradients; lower the lr.",
            "结合梯度尖峰、warmup、学习率相关的发现查找原因；做梯度裁剪；降低学习率。",
        ),
        threshold=_t(
            "z > {z:g} (robust z over a {window:g}-step median/MAD) and > {rise:.0%} rise; before {min_history:g} values of history: > {early_factor:g}× the mean of the steps before",
            "稳健 z > {z:g}（{window:g} 步中位数/MAD）且上升超过 {rise:.0%}；历史不足 {min_history:g} 个值时：超过之前各步均值的 {early_factor:g} 倍",
            "OLMo 2 / llm-foundry (KillLossSpike) / Megatron spike rules",
            z=6.0,
            rise=0.10,
            window=50,
            min_history=8,
            early_factor=2.0,
        ),
        log_fields=("loss",),
    ),
    _f(
        "grad-spike",
        "R",
        "warning",
        ("Gradient-norm spikes", "梯度范数尖峰"),
        (
            "The global gradient norm spikes, and loss spikes may follow it.",
            "全局梯度范数出现尖峰，损失尖峰可能随之而来。",
        ),
        ("Spike steps and the lag to the following loss spikes.", "尖峰所在步及其后损失尖峰的滞后步数。"),
        (
            "Enable gradient clipping (`clip_grad_norm_(params, 1.0)`), lower the lr or lengthen warmup.",
            "开启梯度裁剪（`clip_grad_norm_(params, 1.0)`），降低学习率或延长 warmup。",
        ),
        threshold=_t(
            "z > {z:g} (robust z over a {window:g}-step median/MAD) and > {rise:.0%} rise; lag to a loss spike ≤ {max_lag:g}; spikes fully clipped, or below {alone_factor:g}× their median, with no loss spike after do not count",
            "稳健 z > {z:g}（{window:g} 步中位数/MAD）且上升超过 {rise:.0%}；损失尖峰滞后 ≤ {max_lag:g} 步；被完全裁剪或低于其中位数 {alone_factor:g} 倍、且之后没有损失尖峰的不计",
            "OLMo 2 / llm-foundry / Megatron spike rules",
            z=6.0,
            rise=0.10,
            window=50,
            max_lag=10,
            alone_factor=2.0,
        ),
        log_fields=("grad_norm",),
    ),
    _f(
        "clip-saturated",
        "R",
        "warning",
        ("Clipping active on most steps", "大多数步都触发了梯度裁剪"),
        (
            "Gradient clipping is active on most steps, which lowers the effective learning rate and "
            "hides how large the gradients really are.",
            "大多数步都触发了梯度裁剪，实际上降低了学习率，并掩盖了真实的梯度大小。",
        ),
        ("Fraction of clipped steps and the clip threshold.", "被裁剪的步数比例以及裁剪阈值。"),
        (
            "Lower the learning rate or raise max_norm (clip_value when clipping by value) so that "
            "clipping only catches outliers.",
            "降低学习率或提高 max_norm（按值裁剪时为 clip_value），让裁剪只处理异常值。",
        ),
        threshold=_t(
            "> {share:.0%} of ≥ {min_steps:g} post-warmup steps clipped",
            "warmup 之后至少 {min_steps:g} 步中超过 {share:.0%} 被裁剪",
            "early gradients are large by nature; fewer steps → inconclusive",
            share=0.5,
            min_steps=50,
        ),
        log_fields=("grad_norm", "max_norm"),
    ),
    _f(
        "clip-before-unscale",
        "RL",
        "error",
        ("Clipping on loss-scaled gradients", "在损失缩放后的梯度上做裁剪"),
        (
            "clip_grad_norm_ runs on gradients still multiplied by the GradScaler's scale (before "
            "`scaler.unscale_`), so it clips at a threshold thousands of times too small.",
            "clip_grad_norm_ 在仍乘着 GradScaler 缩放系数的梯度上运行（在 `scaler.unscale_` 之前），裁剪阈值实际上小了成千上万倍。",
        ),
        ("Order of clip and unscale_ calls.", "clip 与 unscale_ 的调用顺序。"),
        (
            "Call `scaler.unscale_(optimizer)` before `clip_grad_norm_`.",
            "在 `clip_grad_norm_` 之前调用 `scaler.unscale_(optimizer)`。",
        ),
        threshold=_t(
            "any clip call before `scaler.unscale_`",
            "任何在 `scaler.unscale_` 之前的裁剪调用",
            "PyTorch AMP docs, Gradient clipping",
        ),
    ),
    _f(
        "fp16-overflow",
        "R",
        "warning",
        ("fp16 loss-scale overflow", "fp16 损失缩放溢出"),
        (
            "The GradScaler skips steps and halves its scale repeatedly: gradients overflow float16.",
            "GradScaler 反复跳过优化步并把缩放系数减半：梯度在 float16 中溢出。",
        ),
        ("Skipped steps and the scale trace.", "被跳过的步以及缩放系数曲线。"),
        (
            "Use bf16 where the hardware has it; otherwise lower the lr, clip after unscale_, or lower "
            "init_scale.",
            "硬件支持时改用 bf16；否则降低学习率、在 unscale_ 之后裁剪，或降低 init_scale。",
        ),
        threshold=_t(
            "≥ {min_skips:g} and ≥ {min_share:.0%} skipped steps after the start-up back-off (ends at the first good step, step {settle:g} at the latest); or ≥ {min_skips:g} steps, all skipped",
            "启动回退之后（在第一个正常步结束，最迟第 {settle:g} 步）跳过 ≥ {min_skips:g} 步且 ≥ {min_share:.0%}；或至少 {min_skips:g} 步且全部被跳过",
            "GradScaler backs off from 2^16 in the first steps (AMP docs)",
            min_skips=3,
            min_share=0.01,
            settle=20,
        ),
        log_fields=("loss_scale",),
    ),
    _f(
        "fp16-no-scaler",
        "RL",
        "error",
        ("float16 without a GradScaler", "使用 float16 但没有 GradScaler"),
        (
            "Training runs under float16 autocast without a GradScaler, so small gradients underflow to "
            "zero and large ones overflow.",
            "在 float16 autocast 下训练却没有 GradScaler，小梯度会下溢为零，大梯度会溢出。",
        ),
        ("Autocast dtype, and that no scaler was seen.", "autocast 的数据类型，以及未检测到 scaler。"),
        (
            "Use `torch.amp.GradScaler` with float16, or switch to bfloat16.",
            "float16 训练时使用 `torch.amp.GradScaler`，或改用 bfloat16。",
        ),
        threshold=_t(
            "float16 autocast without an enabled GradScaler",
            "float16 autocast 且没有启用的 GradScaler",
            "AMP docs",
        ),
    ),
    _f(
        "nonfinite",
        "R",
        "error",
        ("NaN/Inf in loss or gradients", "损失或梯度中出现 NaN/Inf"),
        ("A NaN or Inf appeared in the loss or in the gradients.", "损失或梯度中出现了 NaN 或 Inf。"),
        ("First step, rank, and parameter/bucket.", "首次出现的步、rank 以及参数/桶。"),
        (
            "Find the first step and rank in the evidence; check the data at that step, the lr, and "
            "fp16 overflow.",
            "根据证据找到首次出现的步和 rank；检查该步的数据、学习率以及 fp16 溢出。",
        ),
        threshold=_t("any NaN/Inf not handled by the GradScaler", "任何未被 GradScaler 处理的 NaN/Inf", "—"),
        log_fields=("loss",),
    ),
    _f(
        "adam-eps-dominated",
        "R",
        "warning",
        ("Adam epsilon dominates the update", "Adam 的 epsilon 主导了更新"),
        (
            "A large share of Adam's second-moment entries are below eps², so eps, not the gradient, "
            "sets the step size for those entries.",
            "Adam 二阶矩中有很大比例小于 eps²，这些元素的步长由 eps 而不是梯度决定。",
        ),
        (
            "Share of entries below eps² per parameter group, and eps.",
            "各参数组中小于 eps² 的比例，以及 eps。",
        ),
        (
            "Lower Adam's eps (e.g. 1e-8 → 1e-10 or below) for the affected groups.",
            "降低受影响参数组的 Adam eps（例如从 1e-8 降到 1e-10 或更低）。",
        ),
        threshold=_t(
            "median share of v̂ < eps² > {share:g}",
            "v̂ < eps² 的比例中位数 > {share:g}",
            "ddp-doctor's choice",
            share=0.25,
        ),
    ),
    _f(
        "compile-numerics",
        "R",
        "warning",
        ("Compiled forward differs from eager", "编译后的前向与 eager 不一致"),
        (
            "The torch.compile'd forward differs from eager beyond the eager run-to-run noise.",
            "torch.compile 编译后的前向结果与 eager 的差异超出了 eager 自身多次运行的噪声。",
        ),
        ("Max abs/rel difference vs the eager baseline noise.", "相对于 eager 基准噪声的最大绝对/相对差。"),
        (
            "Report the difference upstream; train with `compile` off for the affected module.",
            "向上游报告该差异；对受影响的模块关闭 compile 训练。",
        ),
        threshold=_t(
            "max_abs > max({noise_factor:g} × eager noise, {atol:g})",
            "max_abs > max({noise_factor:g} × eager 噪声, {atol:g})",
            "`torch._dynamo.utils.same` default tol 1e-4",
            noise_factor=10.0,
            atol=1e-4,
        ),
    ),
    _f(
        "compile-before-ddp",
        "L",
        "info",
        ("torch.compile applied before DDP", "在 DDP 包装之前调用了 torch.compile"),
        (
            "torch.compile is applied before DDP wrapping. Both orders are supported; this is informational.",
            "在 DDP 包装之前调用了 torch.compile。两种顺序都受支持；仅供参考。",
        ),
        ("Line numbers.", "行号。"),
        (
            "Nothing required. Compiling the DDP-wrapped model lets DDPOptimizer split graphs at bucket "
            "boundaries.",
            "无需修改。对 DDP 包装后的模型编译可以让 DDPOptimizer 按桶边界切分计算图。",
        ),
        threshold=_t("the recorded order (info)", "记录的顺序（信息）", "DDP docs"),
        harmless=True,
    ),
    _f(
        "find-unused-true",
        "RL",
        "info",
        ("find_unused_parameters=True", "find_unused_parameters=True"),
        (
            "DDP was built with find_unused_parameters=True, which traverses the autograd graph every "
            "step. It costs time, not accuracy.",
            "DDP 使用了 find_unused_parameters=True，每步都要遍历 autograd 图。它影响速度，不影响精度。",
        ),
        ("The setting.", "该设置的值。"),
        (
            "Set `find_unused_parameters=False` unless some parameters really get no gradient.",
            "除非确有参数得不到梯度，否则设置 `find_unused_parameters=False`。",
        ),
        threshold=_t("the recorded setting (info)", "记录的设置（信息）", "DDP docs"),
        harmless=True,
    ),
    _f(
        "unused-parameters",
        "R",
        "warning",
        ("Parameters that never receive a gradient", "从未得到梯度的参数"),
        ("Some trainable parameters never receive a gradient.", "部分可训练参数从未得到梯度。"),
        ("Parameter names.", "参数名。"),
        (
            "Freeze them (`requires_grad_(False)`) or find why the forward skips them.",
            "冻结它们（`requires_grad_(False)`），或查明前向为何跳过了它们。",
        ),
        threshold=_t("any name in the last `unused` record", "最后一条 `unused` 记录中有任何参数名", "—"),
    ),
    _f(
        "batchnorm-unsynced",
        "RL",
        "warning",
        ("BatchNorm statistics not synced", "BatchNorm 统计量未跨 rank 同步"),
        (
            "BatchNorm layers under DDP without SyncBatchNorm compute statistics on the local "
            "micro-batch only.",
            "DDP 下的 BatchNorm 层没有使用 SyncBatchNorm，只在本地微批次上计算统计量。",
        ),
        ("Module names.", "模块名。"),
        (
            "Convert with `torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)` before wrapping in DDP.",
            "在 DDP 包装前用 `torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)` 转换。",
        ),
        threshold=_t(
            "any non-Sync BatchNorm under DDP",
            "DDP 下有任何非 SyncBatchNorm 的 BatchNorm",
            "SyncBatchNorm docs",
        ),
    ),
    _f(
        "fsdp-clip-wrong",
        "RL",
        "error",
        ("clip_grad_norm_ on a sharded FSDP1 model", "对分片的 FSDP1 模型使用了 clip_grad_norm_"),
        (
            "torch.nn.utils.clip_grad_norm_ on a sharded FSDP1 model sees only this rank's shard, so "
            "each rank clips with a different norm.",
            "对分片的 FSDP1 模型调用 torch.nn.utils.clip_grad_norm_ 只能看到本 rank 的分片，每个 rank 按不同的范数裁剪。",
        ),
        ("Line or module.", "行号或模块。"),
        (
            "Call `model.clip_grad_norm_(max_norm)` (the FSDP method), or move to FSDP2 `fully_shard`.",
            "调用 `model.clip_grad_norm_(max_norm)`（FSDP 自带的方法），或改用 FSDP2 `fully_shard`。",
        ),
        threshold=_t(
            "inconclusive at run time on FSDP1 with clip calls",
            "运行时：FSDP1 且有裁剪调用时无定论（由 lint 判定）",
            "lint decides",
        ),
    ),
    _f(
        "ddp-bucket-config",
        "R",
        "info",
        ("DDP bucket settings", "DDP 桶设置"),
        (
            "bucket_cap_mb and gradient_as_bucket_view as set. They change speed and memory, not the "
            "numerics.",
            "bucket_cap_mb 与 gradient_as_bucket_view 的当前设置。它们影响速度与内存，不影响数值。",
        ),
        ("The values.", "设置值。"),
        ("Nothing required for stability.", "与稳定性无关，无需修改。"),
        threshold=_t("the recorded setting (info)", "记录的设置（信息）", "DDP docs"),
        harmless=True,
    ),
    _f(
        "training-not-progressing",
        "R",
        "error",
        ("Training does not progress: nothing is learned", "训练没有进展：模型什么也没学到"),
        (
            "The optimizer steps, but the model cannot change: every gradient is exactly zero (e.g. a "
            "cross-entropy over a single class has loss 0), the learning rate is 0 (a scheduler that "
            "decayed to 0 or never left its warmup start), the sampled parameter updates are all zero "
            "(parameters frozen by mistake, or an optimizer built over other tensors than the model's), "
            "or the loss is exactly constant. Whatever the loss curve shows, no training happens.",
            "优化器在步进，但模型无法改变：所有梯度恰好为零（例如只有一个类别的交叉熵损失为 0）、学习率为 0（调度器衰减到 0 "
            "或停留在 warmup 起点）、抽样的参数更新全部为零（参数被误冻结，或优化器持有的不是模型的参数），或损失完全不变。"
            "无论损失曲线如何，都没有在训练。",
        ),
        (
            "Per sign, the steps where it holds out of the steps measured: global gradient norm exactly 0, "
            "lr exactly 0, sampled update norms exactly 0, the loss's range; the trainable share of the "
            "model's parameters and the optimizer's parameter count.",
            "每个迹象成立的步数与测量步数：全局梯度范数恰为 0、学习率恰为 0、抽样更新范数恰为 0、损失的取值范围；"
            "模型参数中可训练的比例，以及优化器持有的参数数。",
        ),
        (
            "Check the loss on one batch by hand (a single-class cross_entropy is always 0), that "
            "`requires_grad` is True on the parameters you train, that the optimizer is built from "
            "`model.parameters()` of the model you step, and that the lr schedule is not 0.",
            "手动检查一个批次的损失（单类别的 cross_entropy 恒为 0）、要训练的参数 `requires_grad` 为 True、优化器由"
            "你所训练模型的 `model.parameters()` 构建，以及学习率计划不为 0。",
        ),
        threshold=_t(
            "a sign holds on ≥ {share:.0%} of ≥ {min_steps:g} measured optimizer steps: gradient norm, lr or "
            "sampled update exactly 0, or the loss's range ≤ {rel_range:g} × its mean magnitude",
            "某迹象在至少 {min_steps:g} 个已测量优化步中的 ≥ {share:.0%} 成立：梯度范数、学习率或抽样更新恰为 0，"
            "或损失的取值范围 ≤ 其平均幅度的 {rel_range:g} 倍",
            "exact zeros (no tolerance: a learning model never has them); the share and the range are ddp-doctor's choice",
            share=0.9,
            min_steps=10,
            rel_range=1e-7,
        ),
        # a constant loss, lr 0 or a logged gradient norm of 0 (progress.py reads what is there)
        log_fields=("loss",),
    ),
    _f(
        "grads-not-synced",
        "R",
        "error",
        ("Gradients not synchronised for some parameters", "部分参数的梯度未跨 rank 同步"),
        (
            "Some parameters are updated with a gradient that differs across ranks: it was never "
            "all-reduced (a module outside the DDP wrapper, `no_sync()` left on for the last "
            "micro-step, a gradient written after the reduction), so their replicas drift apart.",
            "部分参数用各 rank 不同的梯度更新：这些梯度从未被 all-reduce（模块在 DDP 包装之外、最后一个微步仍处于 "
            "`no_sync()` 中、归约后又改写了梯度），因此各副本逐渐分离。",
        ),
        (
            "The parameters whose gradient norms differ across ranks just before optimizer.step(), "
            "the first such step, and the steps compared.",
            "optimizer.step() 前梯度范数在各 rank 间不同的参数、首次出现的步，以及比较过的步。",
        ),
        (
            "Wrap every trained module in the DDP model (one DDP around the whole model), leave "
            "`no_sync()` only on the micro-steps before the last, and change gradients before "
            "the backward returns (or by a DDP comm hook), not after.",
            "把所有参与训练的模块都放进 DDP（用一个 DDP 包装整个模型），只在最后一个微步之前使用 `no_sync()`，"
            "在 backward 返回前（或用 DDP comm hook）修改梯度，而不是在之后。",
        ),
        threshold=_t(
            "a parameter's ‖grad‖ differs across ranks by > {rel_tol:.0e} (relative) at a compared step",
            "在比较的某一步，某参数的 ‖grad‖ 在各 rank 间相差超过 {rel_tol:.0e}（相对）",
            "DDP's all-reduce leaves the same bits on every rank; the margin allows for norms computed on "
            "different hardware",
            rel_tol=1e-5,
        ),
    ),
    _f(
        "grad-scale-wrong",
        "R",
        "error",
        ("Gradient scaled by an integer factor", "梯度被放大或缩小了整数倍"),
        (
            "The gradient the optimizer steps on is an integer multiple (or fraction) of the "
            "ranks' average gradient: a second all-reduce with SUM, a `sum` reduction, or a "
            "division by the world size on top of DDP's average. The loss looks the same; the "
            "step is k times too large or too small.",
            "优化器使用的梯度是各 rank 平均梯度的整数倍（或整数分之一）：在 DDP 求平均之后又做了一次 SUM all-reduce、"
            "使用了 `sum` 归约，或又除了一次 world size。损失看起来一样，但步长大了或小了 k 倍。",
        ),
        (
            "The median over compared steps of Σ⟨g, p⟩ before optimizer.step() divided by the ranks' "
            "mean local Σ⟨g, p⟩ (÷ the clip coefficient), and the world size.",
            "各比较步上 optimizer.step() 前的 Σ⟨g, p⟩ 与各 rank 本地 Σ⟨g, p⟩ 平均值之比（除以裁剪系数）的中位数，以及 world size。",
        ),
        (
            "Let DDP average the gradients once: remove the extra `all_reduce` of `.grad` (or divide "
            "its SUM by the world size), and do not divide again by the world size.",
            "只让 DDP 平均一次梯度：删除对 `.grad` 额外的 `all_reduce`（或把 SUM 结果除以 world size），"
            "也不要再除一次 world size。",
        ),
        threshold=_t(
            "median ratio within {int_tol:.0%} of an integer n ≥ 2 or of 1/n; ruled out within "
            "{one_tol:.0%} of 1; a step whose local values cancel (abs(mean) < {min_signal} × mean abs(local)) "
            "is not used",
            "中位比值与某个整数 n ≥ 2 或 1/n 相差在 {int_tol:.0%} 以内；与 1 相差在 {one_tol:.0%} 以内则排除；"
            "本地值相互抵消（abs(平均) < {min_signal} × 平均 abs(本地)）的步不使用",
            "⟨·, p⟩ is linear and p is the same on every replica: DDP's average gives exactly 1 up to "
            "float32 rounding of the sums",
            int_tol=0.05,
            one_tol=0.02,
            min_signal=0.1,
        ),
    ),
)

FINDINGS: dict[str, FindingSpec] = {spec.id: spec for spec in _FINDING_LIST}


def _h(id: str, guess: tuple[str, str], findings: str) -> HypothesisSpec:
    ids = tuple(f.strip() for f in findings.split(","))
    return HypothesisSpec(id=id, guess=Text(*guess), findings=ids)


_HYPOTHESIS_LIST: tuple[HypothesisSpec, ...] = (
    _h(
        "compile",
        ("torch.compile interacts badly with DDP", "torch.compile 与 DDP 相互干扰"),
        "compile-numerics, compile-before-ddp",
    ),
    _h(
        "accumulation-sync",
        ("Gradient accumulation fights DDP's gradient sync", "梯度累积与 DDP 的梯度同步冲突"),
        "accum-no-sync-missing, no-sync-after-forward, replica-divergence, accum-uneven, ddp-bypassed, "
        "zero-grad-inside-accum, accum-loss-unscaled",
    ),
    _h(
        "batch-size",
        ("The effective batch is too small for the model", "有效批量对模型来说太小"),
        "batch-below-noise-scale, oscillation-within-noise",
    ),
    _h(
        "optimizer",
        ("Adam epsilon / beta2 / optimizer-state start-up", "Adam 的 epsilon / beta2 / 优化器状态启动"),
        "adam-eps-dominated, update-ratio-high",
    ),
    _h(
        "data-order",
        (
            "Sampler, shuffle, seed or set_epoch wrong; ranks see skewed data",
            "sampler、shuffle、种子或 set_epoch 有误；各 rank 数据有偏",
        ),
        "sampler-missing, set-epoch-missing, rank-data-skew",
    ),
    _h(
        "logging",
        (
            "The plotted loss is rank 0's alone, so it looks noisier than it is",
            "绘制的损失只是 rank 0 的，看起来比实际更嘈杂",
        ),
        "rank0-only-loss-log, oscillation-within-noise",
    ),
    _h(
        "lr-schedule",
        (
            "Warmup too short, scheduler stepped per micro-batch, lr too high",
            "warmup 太短、调度器按微批次步进、学习率过高",
        ),
        "warmup-short, scheduler-per-microstep, update-ratio-high, loss-unstable",
    ),
    _h(
        "spikes-clipping",
        ("Gradient spikes, clipping missing or misapplied", "梯度尖峰，缺少裁剪或裁剪用错"),
        "loss-spike, grad-spike, clip-saturated, clip-before-unscale, loss-unstable",
    ),
    _h(
        "precision",
        ("fp16 loss-scale overflow/underflow, NaN/Inf", "fp16 损失缩放溢出/下溢，NaN/Inf"),
        "fp16-overflow, fp16-no-scaler, nonfinite",
    ),
    _h(
        "ddp-config",
        (
            "find_unused_parameters, bucket_cap_mb, gradient_as_bucket_view",
            "find_unused_parameters、bucket_cap_mb、gradient_as_bucket_view",
        ),
        "find-unused-true, unused-parameters, ddp-bucket-config",
    ),
    _h(
        "batchnorm",
        ("BatchNorm statistics not synced across ranks", "BatchNorm 统计量未跨 rank 同步"),
        "batchnorm-unsynced",
    ),
    _h(
        "loss-normalization",
        ("Loss averaged per micro-batch while token counts vary", "按微批次平均损失而 token 数变化"),
        "loss-normalization-variable-tokens, loss-norm-per-rank-tokens",
    ),
    _h(
        "gradient-sync",
        (
            "Gradients are not the ranks' average (unsynced parameters, wrong scale)",
            "梯度不是各 rank 的平均（部分参数未同步、缩放错误）",
        ),
        "grads-not-synced, grad-scale-wrong",
    ),
    _h(
        "progress",
        (
            "Training does not progress at all (zero gradients, lr 0, frozen parameters)",
            "训练根本没有进展（梯度为零、学习率为 0、参数被冻结）",
        ),
        "training-not-progressing",
    ),
)

HYPOTHESES: dict[str, HypothesisSpec] = {spec.id: spec for spec in _HYPOTHESIS_LIST}

# Findings that, when confirmed, are facts about the setup but do not make their hypothesis the
# cause of the instability (the verdict stays `ruled-out`).
NOT_A_CAUSE: frozenset[str] = frozenset(fid for fid, spec in FINDINGS.items() if spec.harmless)


def finding(id: str) -> FindingSpec:
    """The spec of a finding ID; a KeyError names the unknown ID."""
    try:
        return FINDINGS[id]
    except KeyError:
        raise KeyError(f"unknown finding id {id!r}; known ids are listed in docs/catalog.md") from None


def limit(finding_id: str, name: str) -> float:
    """A number of a finding's threshold (the one definition the check and the docs share)."""
    spec = finding(finding_id)
    if spec.threshold is None or name not in spec.threshold.values:
        raise KeyError(f"finding {finding_id!r} has no threshold value {name!r}")
    return spec.threshold.values[name]


def threshold_text(finding_id: str, lang: Lang = "en") -> str:
    """The rule of a finding's threshold with its numbers filled in ("" when it has none)."""
    spec = finding(finding_id)
    return spec.threshold.text(lang) if spec.threshold is not None else ""


def runtime_ids() -> tuple[str, ...]:
    return tuple(fid for fid, spec in FINDINGS.items() if spec.runtime)


def lint_ids() -> tuple[str, ...]:
    return tuple(fid for fid, spec in FINDINGS.items() if spec.lint)


def hypotheses_of(finding_id: str) -> tuple[str, ...]:
    return tuple(h.id for h in _HYPOTHESIS_LIST if finding_id in h.findings)


# Words shared by every renderer, in both languages.
UI: dict[str, Text] = {
    "confirmed": Text("confirmed", "已确认"),
    "ruled-out": Text("ruled out", "已排除"),
    "inconclusive": Text("inconclusive", "无定论"),
    "not-measured": Text("not measured", "未测量"),
    "observed": Text("observed (fact)", "已观察（事实）"),
    "error": Text("error", "错误"),
    "warning": Text("warning", "警告"),
    "info": Text("info", "信息"),
    "hypothesis": Text("Hypothesis", "假设"),
    "verdict": Text("Verdict", "结论"),
    "finding": Text("Finding", "发现"),
    "findings": Text("Findings", "发现"),
    "evidence": Text("Evidence", "证据"),
    "fix": Text("Fix", "修复"),
    "summary": Text("Summary", "摘要"),
    "threshold": Text("Threshold", "阈值"),
}


# --- generated documentation (docs/catalog.md, the thresholds table of docs/report.md) -----------


def _kinds(spec: FindingSpec) -> str:
    return "+".join(k for k, on in (("runtime", spec.runtime), ("lint", spec.lint)) if on)


def markdown() -> str:
    """docs/catalog.md: every hypothesis and finding, in English and Chinese."""
    out = [
        "# Catalog: hypotheses and findings / 目录：假设与发现",
        "",
        "Generated from `src/ddp_doctor/core/catalog.py` by `python -m ddp_doctor.core.catalog --markdown` (the IDs "
        "are a public contract: never renamed). Thresholds and their sources are explained in "
        "[report.md](report.md). Severity applies when a finding is confirmed; ruled-out / not-measured / "
        "inconclusive findings are `info`.",
        "",
        "本页由 `src/ddp_doctor/core/catalog.py` 生成（ID 是公开契约，不会改名）。阈值及其出处见 [report.md](report.md)。",
        "",
        "## Hypotheses / 假设",
        "",
        "| id | guess | 猜测 | findings |",
        "|---|---|---|---|",
    ]
    for h in _HYPOTHESIS_LIST:
        fids = ", ".join(f"`{f}`" for f in h.findings)
        out.append(f"| `{h.id}` | {h.guess.en} | {h.guess.zh} | {fids} |")
    harmless = ", ".join(f for f in FINDINGS if f in NOT_A_CAUSE)
    out += [
        "",
        "Verdicts: `confirmed` (a finding that can cause instability is confirmed), `ruled-out` (every "
        f"finding measured and absent, or confirmed but harmless: {harmless}), `not-measured` (nothing "
        "measurable: the summary says what to enable), `inconclusive` (in between).",
        "",
        "结论：`confirmed`（某个可能导致不稳定的发现已确认）、`ruled-out`（全部已测量且不存在，或已确认但无害）、"
        "`not-measured`（无法测量，摘要说明需要开启什么）、`inconclusive`（介于两者之间）。",
        "",
        "## Findings / 发现",
    ]
    for spec in FINDINGS.values():
        threshold = spec.threshold
        out += [
            "",
            f"### `{spec.id}` — {spec.title.en} / {spec.title.zh}",
            "",
            f"*{_kinds(spec)}, severity `{spec.severity}`*",
            "",
            f"- **Meaning**: {spec.meaning.en}",
            f"- **Evidence**: {spec.evidence.en}",
        ]
        if threshold is not None:
            out.append(f"- **Threshold**: {threshold.text('en')} (source: {threshold.source})")
        out += [
            f"- **Fix**: {spec.fix.en}",
            f"- **含义**：{spec.meaning.zh}",
            f"- **证据**：{spec.evidence.zh}",
        ]
        if threshold is not None:
            out.append(f"- **阈值**：{threshold.text('zh')}")
        out.append(f"- **修复**：{spec.fix.zh}")
    return "\n".join(out) + "\n"


def thresholds_markdown() -> str:
    """The thresholds table of docs/report.md (runtime findings)."""
    rows = ["| finding | threshold | source |", "|---|---|---|"]
    for spec in FINDINGS.values():
        if spec.runtime and spec.threshold is not None:
            rows.append(f"| {spec.id} | {spec.threshold.text('en')} | {spec.threshold.source} |")
    return "\n".join(rows) + "\n"


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ddp_doctor.core.catalog", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--markdown", action="store_true", help="print docs/catalog.md")
    group.add_argument(
        "--thresholds", action="store_true", help="print the thresholds table of docs/report.md"
    )
    args = parser.parse_args(argv)
    sys.stdout.write(markdown() if args.markdown else thresholds_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(_main())
