"""Hypothesis `data-order`: sampler, shuffle, seed or set_epoch wrong; ranks see skewed data.

* sampler-missing: the probe hashes every micro-batch's input tensor; with sharded data the hashes
  never coincide across ranks (docs/probe.md, measured facts: 0/16 identical in correct setups, 32/32 without a
  DistributedSampler). Confirmed when more than :data:`IDENTICAL_SHARE` of the micro-batches match
  rank 0's at the same (step, micro-step).
* set-epoch-missing: each DistributedSampler iteration records the hash of its index list;
  without set_epoch every iteration (epoch) yields the same list. Needs ≥ 2 iterations.
* rank-data-skew: the batch-means test of :mod:`ddp_doctor.analysis.quantities.skew` on each
  rank's local loss and log local gradient norm².
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, fmt, not_measured, ruled_out
from ddp_doctor.analysis.quantities.data_overlap import overlap_by_step
from ddp_doctor.analysis.quantities.skew import rank_skew
from ddp_doctor.core.catalog import limit, threshold_text
from ddp_doctor.core.findings import Finding

IDENTICAL_SHARE = limit("sampler-missing", "share")


def check(ctx: Context) -> list[Finding]:
    return [_sampler(ctx), _set_epoch(ctx), _skew(ctx)]


def _sampler(ctx: Context) -> Finding:
    fid = "sampler-missing"
    same_t, total_t, n_ranks = overlap_by_step(ctx.run, ctx.series.n_steps)
    if n_ranks < 2:
        return not_measured(
            fid,
            "Needs input hashes from ≥ 2 ranks.",
            "需要至少 2 个 rank 的输入哈希。",
            ranks_with_hashes=n_ranks,
        )
    same, total = int(same_t.sum()), int(total_t.sum())
    if total == 0:
        return not_measured(
            fid,
            "No micro-batch was hashed on two ranks at the same step.",
            "没有在同一步被两个 rank 哈希的微批次。",
        )
    share = same / total
    ev: dict[str, Any] = dict(
        identical_micro_batches=same,
        compared=total,
        share=share,
        threshold=threshold_text(fid),
    )
    if share > IDENTICAL_SHARE:
        return confirmed(
            fid,
            f"{share:.0%} of micro-batches ({same}/{total}) were identical across ranks: "
            "every rank reads the same data.",
            f"{share:.0%} 的微批次（{same}/{total}）在各 rank 之间完全相同：每个 rank 读到的是同样的数据。",
            **ev,
        )
    return ruled_out(
        fid,
        f"{same} of {total} micro-batches identical across ranks ({share:.1%}).",
        f"各 rank 之间相同的微批次为 {same}/{total}（{share:.1%}）。",
        **ev,
    )


def _set_epoch(ctx: Context) -> Finding:
    fid = "set-epoch-missing"
    cfg = ctx.config("sampler")
    iters = {r: d.sampler for r, d in ctx.run.ranks.items() if d.sampler}
    if not iters:
        return not_measured(
            fid,
            "No DistributedSampler iteration was recorded (no sampler, or an iterable dataset).",
            "未记录到 DistributedSampler 的迭代（没有 sampler，或为可迭代数据集）。",
            sampler_config=cfg,
        )
    if cfg is not None and cfg.get("shuffle") is False:
        return ruled_out(
            fid,
            "The DistributedSampler does not shuffle (shuffle=False): the order is "
            "the same every epoch by design, set_epoch does not change it.",
            "DistributedSampler 未开启 shuffle：每个 epoch 顺序本就相同，set_epoch 不影响。",
            shuffle=False,
        )
    n_iter = max(len(v) for v in iters.values())
    if n_iter < 2:
        return not_measured(
            fid,
            "Only one epoch was iterated: a repeat needs ≥ 2 epochs.",
            "只遍历了一个 epoch：判断顺序是否重复至少需要 2 个 epoch。",
            epochs_seen=1,
        )
    repeats, pairs = 0, 0
    epochs: set[int] = set()
    for recs in iters.values():
        for a, b in zip(recs, recs[1:]):
            pairs += 1
            repeats += a.get("hash") == b.get("hash")
        epochs.update(int(x.get("epoch", 0)) for x in recs)
    ev: dict[str, Any] = dict(
        sampler_iterations=n_iter,
        epoch_values_seen=sorted(epochs),
        repeated_orders=repeats,
        consecutive_pairs=pairs,
        threshold=threshold_text(fid),
    )
    if repeats > pairs / 2:
        return confirmed(
            fid,
            f"The shuffled index order repeated in {repeats} of {pairs} consecutive "
            f"epoch pairs (epoch values seen: {sorted(epochs)}): set_epoch is not called.",
            f"打乱后的索引顺序在 {pairs} 对相邻 epoch 中有 {repeats} 对重复（观察到的 epoch 值：{sorted(epochs)}）："
            "没有调用 set_epoch。",
            **ev,
        )
    return ruled_out(
        fid,
        f"The index order changed between epochs ({pairs - repeats} of {pairs} consecutive pairs differ).",
        f"各 epoch 之间索引顺序发生了变化（{pairs} 对中 {pairs - repeats} 对不同）。",
        **ev,
    )


def _skew(ctx: Context) -> Finding:
    fid = "rank-data-skew"
    s = ctx.series
    tests = []
    loss = rank_skew(s.local_loss, s.ranks, "local loss")
    if loss:
        tests.append(loss)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = rank_skew(np.log(s.gsq_local), s.ranks, "log local grad norm²")
    if g:
        tests.append(g)
    if not tests:
        return not_measured(
            fid,
            "Needs ≥ 2 ranks and ≥ 50 common steps.",
            "需要至少 2 个 rank 和 50 个共同步。",
            ranks=len(s.ranks),
            steps=s.n_steps,
        )
    worst = max(tests, key=lambda t: (t.skewed, abs(t.t)))
    ev = dict(tests={t.signal: t.to_json() for t in tests})
    if worst.skewed:
        return confirmed(
            fid,
            f"Rank {worst.worst_rank}'s {worst.signal} differs persistently from the "
            f"other ranks by {fmt(worst.shift)} ({worst.relative_shift:.1%}; t = {worst.t:.1f}, "
            f"p = {worst.p:.1e}).",
            f"rank {worst.worst_rank} 的 {worst.signal} 与其他 rank 持续相差 "
            f"{fmt(worst.shift)}（{worst.relative_shift:.1%}；t = {worst.t:.1f}，p = {worst.p:.1e}）。",
            **ev,
        )
    return ruled_out(
        fid,
        f"No rank differs persistently (largest |t| = {abs(worst.t):.1f} on rank "
        f"{worst.worst_rank}'s {worst.signal}, p = {worst.p:.2g}).",
        f"没有 rank 持续偏离（最大 |t| = {abs(worst.t):.1f}，rank {worst.worst_rank} 的 {worst.signal}，"
        f"p = {worst.p:.2g}）。",
        **ev,
    )
