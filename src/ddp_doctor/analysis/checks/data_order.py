"""Hypothesis `data-order`: sampler, shuffle, seed or set_epoch wrong; ranks see skewed data.

* sampler-missing: the probe hashes every micro-batch's input tensor; with sharded data the hashes
  never coincide across ranks (docs/probe.md, measured facts: 0/16 identical in correct setups, 32/32 without a
  DistributedSampler). Confirmed when more than :data:`IDENTICAL_SHARE` of the micro-batches match
  rank 0's at the same (step, micro-step).
* set-epoch-missing: each DistributedSampler iteration records the hash of its index list and
  the epoch value it ran at; without set_epoch every iteration (epoch) yields the same list.
  Judged on the sampler that feeds the optimizer steps (train, not val/test), over its training
  iterations (peeks that fed no step set aside; :mod:`ddp_doctor.analysis.quantities.samplers`):
  decided from the epoch values and the order per epoch value: with one epoch value, confirmed
  when more than half of consecutive training iterations repeat the order ("set_epoch is not
  called"); with several, set_epoch is called, re-iterations at one value repeat by design (noted),
  and it is confirmed only when the order stays the same across different values (the sampler
  ignores its epoch). Needs ≥ 2 training iterations.
* rank-data-skew: the batch-means test of :mod:`ddp_doctor.analysis.quantities.skew` on each
  rank's local loss and log local gradient norm².
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, fmt, not_measured, ruled_out
from ddp_doctor.analysis.quantities.data_overlap import overlap_by_step
from ddp_doctor.analysis.quantities.samplers import feeding, sampler_uses
from ddp_doctor.analysis.quantities.skew import rank_skew
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

IDENTICAL_SHARE = limit("sampler-missing", "share")


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("sampler-missing", "set-epoch-missing", "rank-data-skew")


def check(ctx: Context) -> list[Finding]:
    return [_sampler(ctx), _set_epoch(ctx), _skew(ctx)]


def _sampler(ctx: Context) -> Finding:
    fid = "sampler-missing"
    same_t, total_t, n_ranks = overlap_by_step(ctx.run, ctx.series)
    if n_ranks < 2:
        return not_measured(
            fid,
            Text("Needs input hashes from ≥ 2 ranks.", "需要至少 2 个 rank 的输入哈希。"),
            ranks_with_hashes=n_ranks,
        )
    same, total = int(same_t.sum()), int(total_t.sum())
    if total == 0:
        return not_measured(
            fid,
            Text(
                "No micro-batch was hashed on two ranks at the same step.",
                "没有在同一步被两个 rank 哈希的微批次。",
            ),
        )
    share = same / total
    ev: dict[str, Any] = dict(
        identical_micro_batches=same,
        compared=total,
        share=share,
        threshold=threshold_sentence(fid),
    )
    if share > IDENTICAL_SHARE:
        return confirmed(
            fid,
            Text(
                f"{share:.0%} of micro-batches ({same}/{total}) were identical across ranks: "
                "every rank reads the same data.",
                f"{share:.0%} 的微批次（{same}/{total}）在各 rank 之间完全相同：每个 rank 读到的是同样的数据。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"{same} of {total} micro-batches identical across ranks ({share:.1%}).",
            f"各 rank 之间相同的微批次为 {same}/{total}（{share:.1%}）。",
        ),
        **ev,
    )


def _set_epoch(ctx: Context) -> Finding:
    """Decided on the sampler that feeds the optimizer steps, from its training iterations' epoch
    values and orders (quantities/samplers.py); the other samplers are listed in the evidence."""
    fid = "set-epoch-missing"
    uses = sampler_uses(ctx.run)
    if not uses:
        return not_measured(
            fid,
            Text(
                "No DistributedSampler iteration was recorded (no sampler, or an iterable dataset).",
                "未记录到 DistributedSampler 的迭代（没有 sampler，或为可迭代数据集）。",
            ),
            sampler_config=ctx.config("sampler"),
        )
    use, chosen = feeding(uses)
    assert use is not None
    which = (
        "the sampler"
        if len(uses) == 1
        else f"sampler {use.sampler} (the one feeding the optimizer steps: {chosen})"
    )
    which_zh = (
        "该 sampler" if len(uses) == 1 else f"sampler {use.sampler}（为优化步提供数据的那个：{chosen}）"
    )
    ev: dict[str, Any] = dict(
        judged=use.summary(),
        chosen_because=chosen,
        other_samplers=[u.summary() for u in uses if u is not use],
        threshold=threshold_sentence(fid),
    )
    if use.shuffle is False:
        return ruled_out(
            fid,
            Text(
                f"{which.capitalize()} does not shuffle (shuffle=False): its order is the same every epoch by "
                "design, set_epoch does not change it.",
                f"{which_zh}未开启 shuffle：每个 epoch 顺序本就相同，set_epoch 不影响。",
            ),
            shuffle=False,
            **ev,
        )
    training = use.training()
    n_train = max((len(v) for v in training.values()), default=0)
    aside = use.set_aside()
    aside_en = f" ({aside} iteration(s) that fed no optimizer step — peeks — set aside)" if aside else ""
    aside_zh = f"（{aside} 次未为任何优化步提供数据的迭代——如预取一个批次——不计入）" if aside else ""
    if n_train < 2:
        return not_measured(
            fid,
            Text(
                f"{which.capitalize()} was iterated for training only once{aside_en}: a repeat needs ≥ 2 epochs.",
                f"{which_zh}只进行了一次训练迭代{aside_zh}：判断顺序是否重复至少需要 2 个 epoch。",
            ),
            epochs_seen=1,
            **ev,
        )
    # the order per epoch value: re-iterations at one value (two loaders on one sampler, set_epoch
    # called after the first iteration) repeat by design; across values the order must change
    repeats = pairs = same_value = same_value_repeats = 0
    epochs: set[int] = set()
    for its in training.values():
        for a, b in zip(its, its[1:]):
            pairs += 1
            repeats += a.hash == b.hash
            if a.epoch == b.epoch:
                same_value += 1
                same_value_repeats += a.hash == b.hash
        epochs.update(i.epoch for i in its if i.epoch is not None)
    values = sorted(epochs)
    shown = _values_text(values)
    across, across_repeats = pairs - same_value, repeats - same_value_repeats
    ev.update(
        sampler_iterations=n_train,
        epoch_values_seen=values[:50],
        repeated_orders=repeats,
        consecutive_pairs=pairs,
        pairs_at_the_same_epoch_value=same_value,
        repeated_across_epoch_values=across_repeats,
        pairs_across_epoch_values=across,
    )
    again = (
        f" ({same_value_repeats} training iteration(s) re-ran the order of the previous one at the same epoch "
        "value: a sampler iterated more than once per epoch, or set_epoch called after the first iteration)"
        if same_value_repeats
        else ""
    )
    again_zh = (
        f"（{same_value_repeats} 次训练迭代在相同 epoch 值下重复了上一次的顺序）"
        if same_value_repeats
        else ""
    )
    if len(values) <= 1:
        if repeats > pairs / 2:
            return confirmed(
                fid,
                Text(
                    f"The shuffled index order of {which} repeated in {repeats} of {pairs} consecutive training "
                    f"iterations{aside_en}, all at epoch value {shown}: set_epoch is not called.",
                    f"{which_zh}打乱后的索引顺序在 {pairs} 对相邻训练迭代中有 {repeats} 对重复{aside_zh}，epoch 值都是 {shown}："
                    "没有调用 set_epoch。",
                ),
                **ev,
            )
        return ruled_out(
            fid,
            Text(
                f"The index order of {which} changed between training iterations ({pairs - repeats} of {pairs} "
                f"consecutive pairs differ) although the epoch value stayed {shown} (seed or dataset changed){aside_en}.",
                f"{which_zh}的索引顺序在训练迭代之间发生了变化（{pairs} 对中 {pairs - repeats} 对不同），"
                f"尽管 epoch 值一直是 {shown}{aside_zh}。",
            ),
            **ev,
        )
    if across_repeats > across / 2:
        return confirmed(
            fid,
            Text(
                f"set_epoch is called (epoch values {shown}), but the index order of {which} stayed the same in "
                f"{across_repeats} of {across} consecutive training iterations at different epoch values: the "
                f"sampler ignores its epoch{aside_en}.",
                f"调用了 set_epoch（epoch 值 {shown}），但{which_zh}的索引顺序在 {across} 对 epoch 值不同的相邻训练迭代中有 "
                f"{across_repeats} 对未变：sampler 忽略了 epoch{aside_zh}。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"set_epoch is called: the index order of {which} changed with the epoch value ({across - across_repeats} "
            f"of {across} consecutive training iterations at different epoch values differ; epoch values {shown})"
            f"{again}{aside_en}.",
            f"调用了 set_epoch：{which_zh}的索引顺序随 epoch 值变化（{across} 对 epoch 值不同的相邻训练迭代中 "
            f"{across - across_repeats} 对不同；epoch 值 {shown}）{again_zh}{aside_zh}。",
        ),
        **ev,
    )


def _values_text(values: list[int]) -> str:
    """[0] → "0"; a run of consecutive values → "0–4"; else the list (at most 8 shown)."""
    if not values:
        return "unknown"
    if len(values) == 1:
        return str(values[0])
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}–{values[-1]}"
    head = ", ".join(map(str, values[:8]))
    return f"[{head}{', ...' if len(values) > 8 else ''}]"


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
            Text("Needs ≥ 2 ranks and ≥ 50 common steps.", "需要至少 2 个 rank 和 50 个共同步。"),
            ranks=len(s.ranks),
            steps=s.n_steps,
        )
    # a skewed signal by its relative shift (the per-rank means), else by |t|
    worst = max(tests, key=lambda t: (t.skewed, t.relative_shift if t.skewed else abs(t.t)))
    ev = dict(tests={t.signal: t.to_json() for t in tests})
    if worst.skewed:
        return confirmed(
            fid,
            Text(
                f"Rank {worst.worst_rank}'s {worst.signal} differs persistently from the "
                f"other ranks by {fmt(worst.shift)} ({worst.relative_shift:.1%}; t = {worst.t:.1f}, "
                f"p = {worst.p:.1e}).",
                f"rank {worst.worst_rank} 的 {worst.signal} 与其他 rank 持续相差 "
                f"{fmt(worst.shift)}（{worst.relative_shift:.1%}；t = {worst.t:.1f}，p = {worst.p:.1e}）。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"No rank differs persistently (largest |t| = {abs(worst.t):.1f} on rank "
            f"{worst.worst_rank}'s {worst.signal}, p = {worst.p:.2g}).",
            f"没有 rank 持续偏离（最大 |t| = {abs(worst.t):.1f}，rank {worst.worst_rank} 的 {worst.signal}，"
            f"p = {worst.p:.2g}）。",
        ),
        **ev,
    )
