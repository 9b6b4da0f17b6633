"""Hypothesis `data-order` and its findings (the catalog's specs; the checks are analysis/checks/)."""

from __future__ import annotations

from ddp_doctor.core.catalog.model import FindingSpec, HypothesisSpec, Text, hypothesis, rule, spec

HYPOTHESIS: HypothesisSpec | None = hypothesis(
    "data-order",
    Text(
        "Sampler, shuffle, seed or set_epoch wrong; ranks see skewed data",
        "sampler、shuffle、种子或 set_epoch 有误；各 rank 数据有偏",
    ),
    "sampler-missing, set-epoch-missing, rank-data-skew",
)

SPECS: tuple[FindingSpec, ...] = (
    spec(
        "sampler-missing",
        "RL",
        "error",
        Text("Ranks read the same data", "各 rank 读取相同的数据"),
        Text(
            "Ranks read the same samples: there is no DistributedSampler or equivalent sharding, so "
            "the effective batch holds duplicates and data parallelism adds no new data.",
            "各 rank 读到相同的样本：没有使用 DistributedSampler 或等价的分片方式，因此有效批次中全是重复样本，"
            "数据并行没有带来新的数据。",
        ),
        Text("Fraction of micro-batches identical across ranks.", "各 rank 之间完全相同的微批次所占比例。"),
        Text(
            "Pass `sampler=DistributedSampler(dataset)` to the DataLoader (or shard by rank) and call "
            "`sampler.set_epoch(epoch)` at the start of every epoch.",
            "给 DataLoader 传入 `sampler=DistributedSampler(dataset)`（或按 rank 分片），并在每个 epoch 开始时调用 "
            "`sampler.set_epoch(epoch)`。",
        ),
        threshold=rule(
            Text(
                "> {share:.0%} of micro-batches identical to the lowest rank's at the same (step, micro-step)",
                "超过 {share:.0%} 的微批次与最低 rank 在同一（步，微步）完全相同",
            ),
            "docs/probe.md (measured facts): 32/32 identical without a sampler, 0/16 with",
            share=0.5,
        ),
        cause_rank=130,
    ),
    spec(
        "set-epoch-missing",
        "RL",
        "warning",
        Text("DistributedSampler order repeats every epoch", "DistributedSampler 每个 epoch 顺序相同"),
        Text(
            "DistributedSampler shuffles, but set_epoch is never called, so every epoch visits the "
            "samples in exactly the same order.",
            "DistributedSampler 开启了 shuffle，但从未调用 set_epoch，因此每个 epoch 的样本顺序完全相同。",
        ),
        Text("Epochs seen and whether the index order repeated.", "观察到的 epoch 数以及索引顺序是否重复。"),
        Text(
            "Call `sampler.set_epoch(epoch)` before iterating the DataLoader in each epoch.",
            "在每个 epoch 遍历 DataLoader 之前调用 `sampler.set_epoch(epoch)`。",
        ),
        threshold=rule(
            Text(
                "at one epoch value, the index order repeated in more than half of the consecutive training "
                "iterations of the sampler that feeds the optimizer steps; at several epoch values, the order "
                "unchanged across different values in more than half (≥ 2 iterations; peeks that fed no step set aside)",
                "只有一个 epoch 值时：为优化步提供数据的 sampler 的相邻训练迭代中超过一半索引顺序相同；有多个 epoch 值时："
                "epoch 值不同的相邻训练迭代中超过一半顺序未变（至少 2 次；未为任何优化步提供数据的预取迭代不计入）",
            ),
            "DistributedSampler docs (set_epoch seeds the shuffle)",
        ),
    ),
    spec(
        "rank-data-skew",
        "R",
        "warning",
        Text("One rank's data differs persistently", "某个 rank 的数据持续偏离"),
        Text(
            "One rank's loss or gradient norm differs persistently from the other ranks', which points "
            "at skewed shards (sorted data, one rank with the long documents, a bad file).",
            "某个 rank 的损失或梯度范数持续与其他 rank 不同，说明数据分片有偏（数据已排序、长文档集中在一个 rank、"
            "某个文件有问题）。",
        ),
        Text(
            "Per-rank means and the test statistic with its p-value.",
            "各 rank 的均值，以及检验统计量和 p 值。",
        ),
        Text(
            "Shuffle before sharding; check that each rank's shard is drawn from the same distribution.",
            "先打乱再分片；检查每个 rank 的分片是否来自同一分布。",
        ),
        threshold=rule(
            Text(
                "p < {alpha:g} (Bonferroni over ranks) and shift > {min_shift:.0%}",
                "Bonferroni 校正后 p < {alpha:g} 且偏移超过 {min_shift:.0%}",
            ),
            "batch-means t-test (analysis/quantities/skew.py)",
            alpha=1e-3,
            min_shift=0.02,
        ),
        cause_rank=140,
    ),
)
