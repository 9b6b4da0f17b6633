"""Hypothesis `accumulation-sync`: does gradient accumulation fight DDP's gradient sync?

Rules (all from the recorded counts; no threshold is tuned on data):
* accum-no-sync-missing: with A ≥ 2 micro-steps, DDP's ``no_sync`` means one all-reduce round on
  the last micro-step only (PyTorch docs, ``DistributedDataParallel.no_sync``). Confirmed when most
  multi-micro steps synced on every micro-step. Info: numerically equivalent.
* no-sync-after-forward: DDP reads ``require_backward_grad_sync`` in forward, so toggling it after
  forward shifts the sync by one micro-step: the last micro-step unsynced while another synced.
* replica-divergence: per-parameter int32 bit-sums (`replica` records) must be equal on all ranks.
  Replicas that diverged stay diverged (nothing re-synchronises parameters), so a checksum at step
  s covers steps 0..s: the check covers the run up to its last common checksum (the probe writes
  one for the final state at exit); less than MIN_COVERAGE of the run is inconclusive.
* accum-uneven: every rank must record the same optimizer steps with the same micro-step counts.
* ddp-bypassed: world size > 1 and zero all-reduces in every recorded step.
* zero-grad-inside-accum: a zero_grad call after a backward of an optimizer step of ≥ 2 micro-steps
  (run dirs without `zero_grad_after_backward`: more than one call in the step).
* accum-loss-unscaled: the backward root over the loss-function output (as a per-unit mean) is
  1/A for a loss divided by the accumulation count A (also for a global-token-normalised loss, on
  average), and 1 when undivided. Confirmed when the median ratio × A ≥ sqrt(A), the geometric
  midpoint of the two cases.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, coverage, fmt, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

# Share of steps that must show a pattern before it is called the run's pattern (catalog thresholds).
NO_SYNC_SHARE = limit("accum-no-sync-missing", "share")
AFTER_FORWARD_SHARE = limit("no-sync-after-forward", "share")
ZERO_GRAD_SHARE = limit("zero-grad-inside-accum", "share")


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = (
    "accum-loss-unscaled",
    "zero-grad-inside-accum",
    "accum-no-sync-missing",
    "no-sync-after-forward",
    "replica-divergence",
    "accum-uneven",
    "ddp-bypassed",
)


def check(ctx: Context) -> list[Finding]:
    return [
        _no_sync(ctx),
        _after_forward(ctx),
        _replicas(ctx),
        _uneven(ctx),
        _bypassed(ctx),
        _zero_grad(ctx),
        _unscaled(ctx),
    ]


def _no_sync(ctx: Context) -> Finding:
    fid, p = "accum-no-sync-missing", ctx.sync
    if p.steps == 0:
        return ruled_out(
            fid,
            Text(
                "No gradient accumulation (1 micro-step per optimizer step): nothing to skip syncing.",
                "没有梯度累积（每个优化步 1 个微步），无需跳过同步。",
            ),
            multi_micro_steps=0,
        )
    ds = ctx.config("deepspeed")
    stage = ds.get("zero_stage") if ds else None
    if isinstance(stage, int) and stage >= 2:
        # ZeRO-2/3 reduce-scatter each micro-step's gradients into partitions by design; the engine
        # refuses no_sync() then (DeepSpeed docs, "Gradient accumulation" / engine.no_sync)
        return ruled_out(
            fid,
            Text(
                f"DeepSpeed ZeRO stage {stage} reduces gradients on every micro-step by design "
                f"({p.every_micro} of {p.steps} accumulation steps did): no_sync does not apply.",
                f"DeepSpeed ZeRO stage {stage} 按设计在每个微步都归约梯度（{p.steps} 个累积步中 "
                f"{p.every_micro} 个如此）：no_sync 不适用。",
            ),
            zero_stage=stage,
            steps_syncing_every_micro=p.every_micro,
            multi_micro_steps=p.steps,
        )
    if p.total_syncs == 0:
        return not_measured(
            fid,
            Text(
                "No gradient all-reduce was recorded, so the sync pattern is unknown.",
                "未记录到梯度 all-reduce，无法判断同步模式。",
            ),
            all_reduces=0,
        )
    share = p.every_micro / p.steps
    ev: dict[str, Any] = dict(
        steps_syncing_every_micro=p.every_micro,
        steps_syncing_last_only=p.last_only,
        multi_micro_steps=p.steps,
        micro_steps_per_optimizer_step=ctx.batch.micro_steps,
        threshold=threshold_sentence(fid),
    )
    if share > NO_SYNC_SHARE:
        return confirmed(
            fid,
            Text(
                f"Gradients were all-reduced on every micro-step in {p.every_micro} of "
                f"{p.steps} accumulation steps ({share:.0%}); with no_sync only the last "
                "micro-step needs it. Costs bandwidth, not accuracy.",
                f"{p.steps} 个累积步中有 {p.every_micro} 个（{share:.0%}）在每个微步都做了 all-reduce；"
                "使用 no_sync 只需最后一个微步同步。只浪费带宽，不影响精度。",
            ),
            **ev,
        )
    other = p.steps - p.every_micro - p.last_only
    how = f"{p.last_only} synced on the last micro-step only"
    how_zh = f"{p.last_only} 个只在最后一个微步同步"
    if other:
        how += f", {other} in another pattern (see no-sync-after-forward)"
        how_zh += f"，{other} 个为其他模式（见 no-sync-after-forward）"
    return ruled_out(
        fid,
        Text(
            f"Gradients were all-reduced on every micro-step in only {p.every_micro} of {p.steps} "
            f"accumulation steps ({how}).",
            f"{p.steps} 个累积步中只有 {p.every_micro} 个在每个微步都做了 all-reduce（{how_zh}）。",
        ),
        **ev,
    )


def _after_forward(ctx: Context) -> Finding:
    fid, p = "no-sync-after-forward", ctx.sync
    if p.steps == 0 or p.total_syncs == 0:
        return not_measured(
            fid,
            Text(
                "Needs gradient accumulation with recorded all-reduces; run "
                "`ddp-doctor lint` on the script for the static check.",
                "需要带有 all-reduce 记录的梯度累积；可对脚本运行 `ddp-doctor lint` 做静态检查。",
            ),
            multi_micro_steps=p.steps,
        )
    ev: dict[str, Any] = dict(
        steps_last_micro_unsynced=p.last_unsynced,
        multi_micro_steps=p.steps,
        threshold=threshold_sentence(fid),
    )
    if p.last_unsynced / p.steps > AFTER_FORWARD_SHARE:
        return confirmed(
            fid,
            Text(
                f"In {p.last_unsynced} of {p.steps} accumulation steps the last "
                "micro-step was not synced while an earlier one was: the sync flag takes "
                "effect one micro-step late (toggled after the forward).",
                f"{p.steps} 个累积步中有 {p.last_unsynced} 个最后一个微步没有同步而更早的微步同步了："
                "同步标志晚了一个微步生效（在前向之后才切换）。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"The last micro-step synced in {p.steps - p.last_unsynced} of {p.steps} accumulation steps.",
            f"{p.steps} 个累积步中有 {p.steps - p.last_unsynced} 个在最后一个微步同步。",
        ),
        **ev,
    )


def _replicas(ctx: Context) -> Finding:
    fid = "replica-divergence"
    by_step: dict[int, dict[int, dict[str, Any]]] = {}
    for r, data in ctx.run.ranks.items():
        for rec in data.replica:
            by_step.setdefault(int(rec.get("step", -1)), {})[r] = rec
    sharded = _sharded_fsdp1(ctx)
    # (reference rank, rank) per step: ranks holding the same parameters, the lowest the reference
    pairs = {s: p for s, recs in by_step.items() if (p := _replica_pairs(list(recs), sharded))}
    if sharded is not None and by_step and not pairs:
        fsdp = ctx.config("fsdp") or {}
        return not_measured(
            fid,
            Text(
                f"FSDP1 {fsdp.get('sharding_strategy')} shards the parameters "
                f"(shard group of {fsdp.get('shard_group_size')}, {fsdp.get('replicas')} replica(s)): "
                "checksums are comparable only between ranks holding the same shard, and no two do.",
                f"FSDP1 {fsdp.get('sharding_strategy')} 对参数分片（分片组 {fsdp.get('shard_group_size')}，"
                f"{fsdp.get('replicas')} 个副本）：只有持有同一分片的 rank 之间的校验和可比，而没有两个 rank 持有同一分片。",
            ),
            sharding_strategy=fsdp.get("sharding_strategy"),
            shard_group_size=fsdp.get("shard_group_size"),
        )
    common = sorted(pairs)
    if len(ctx.run.ranks) < 2 or not common:
        return not_measured(
            fid,
            Text(
                "Needs `replica` checksum records from ≥ 2 ranks (written every `--every` steps).",
                "需要至少 2 个 rank 的 `replica` 校验和记录（每 `--every` 步写一次）。",
            ),
            ranks_with_checksums=sum(1 for d in ctx.run.ranks.values() if d.replica),
        )
    params = ctx.config("params")
    names = params.get("names", []) if params else []
    finals = [s for s in common if any(by_step[s][r].get("final") for pair in pairs[s] for r in pair)]
    previous = None
    for s in common:
        vecs = {r: rec.get("params") or [] for r, rec in by_step[s].items()}
        for ref_rank, r in pairs[s]:
            ref, v = vecs[ref_rank], vecs[r]
            if v != ref:
                diff = [i for i, (a, b) in enumerate(zip(ref, v)) if a != b] or [min(len(ref), len(v))]
                name = names[diff[0]] if diff[0] < len(names) else f"parameter #{diff[0]}"
                since = (
                    f" (equal at step {previous}: it started after that step)" if previous is not None else ""
                )
                since_zh = f"（第 {previous} 步时仍一致：分歧始于其后）" if previous is not None else ""
                return confirmed(
                    fid,
                    Text(
                        f"Replicas differ at step {s}{since}: rank {r} vs rank {ref_rank}, "
                        f"first at {name} ({len(diff)} parameter tensor(s) differ).",
                        f"第 {s} 步副本不一致{since_zh}：rank {r} 与 rank {ref_rank} 不同，首个不同参数为 {name}"
                        f"（共 {len(diff)} 个参数张量不同）。",
                    ),
                    first_step=s,
                    last_equal_step=previous,
                    ranks=[ref_rank, r],
                    parameter=name,
                    differing_tensors=len(diff),
                    checked_steps=common,
                    threshold=threshold_sentence(fid),
                )
        previous = s
    among = " holding the same FSDP1 shard" if sharded is not None else ""
    among_zh = "（持有同一 FSDP1 分片者之间）" if sharded is not None else ""
    shown = ", ".join(str(x) for x in (common if len(common) <= 6 else [*common[:4], "…", common[-1]]))
    return ruled_out(
        fid,
        Text(
            f"Bit-exact replica checksums agree on all ranks{among} at {len(common)} checked step(s) "
            f"(last {common[-1]}).",
            f"在检查的 {len(common)} 个步（最后为第 {common[-1]} 步）所有 rank{among_zh}的逐位校验和一致。",
        ),
        coverage=coverage(
            common[-1] + 1,
            max(ctx.optimizer_steps, common[-1] + 1),
            Text(
                f"checksums at steps {shown}" + ("" if finals else "; no final-state checksum"),
                f"在第 {shown} 步做了校验" + ("" if finals else "；没有最终状态的校验和"),
            ),
        ),
        checked_steps=common,
        last_step=common[-1],
        final_checksum=bool(finals),
        threshold=threshold_sentence(fid),
    )


def _sharded_fsdp1(ctx: Context) -> dict[int, int] | None:
    """rank → shard index on a sharded FSDP1/HSDP run (each rank checksums only its shard of the flat
    parameters, so only ranks holding the same shard are replicas); None when parameters are
    replicated (DDP, NO_SHARD) or FSDP2 (whose shards the probe does not checksum)."""
    fsdp = ctx.config("fsdp")
    if not fsdp or fsdp.get("version") != 1 or int(fsdp.get("shard_group_size") or 1) <= 1:
        return None
    shards: dict[int, int] = {}
    for r, data in ctx.run.ranks.items():
        cfg = data.config("fsdp")
        shard = cfg.get("shard_rank") if cfg else None
        # runs recorded before `shard_rank` existed: nothing is known to be comparable
        shards[r] = shard if isinstance(shard, int) and not isinstance(shard, bool) else -1 - r
    return shards


def _replica_pairs(ranks: list[int], shards: dict[int, int] | None) -> list[tuple[int, int]]:
    """(reference, rank) pairs of ranks holding the same parameters: all ranks when they are
    replicated, else the ranks of each FSDP1 shard; the lowest rank of a group is its reference."""
    groups: dict[int, list[int]] = {}
    for r in sorted(ranks):
        groups.setdefault(0 if shards is None else shards.get(r, -1 - r), []).append(r)
    return [(group[0], r) for group in groups.values() for r in group[1:]]


def _uneven(ctx: Context) -> Finding:
    fid = "accum-uneven"
    if len(ctx.run.ranks) < 2:
        return not_measured(
            fid,
            Text("Needs step records from ≥ 2 ranks.", "需要至少 2 个 rank 的步记录。"),
            ranks=len(ctx.run.ranks),
        )
    m = ctx.series.micro
    if m.size == 0:
        return not_measured(fid, Text("No optimizer step recorded yet.", "尚未记录到优化步。"))
    counts = {r: int(np.isfinite(m[i]).sum()) for i, r in enumerate(ctx.series.ranks)}
    micro_tot = {r: int(np.nansum(m[i])) for i, r in enumerate(ctx.series.ranks)}
    both = np.isfinite(m).all(axis=0)
    differ = np.flatnonzero(both & (np.nanmax(m, axis=0) != np.nanmin(m, axis=0)))
    ended = all(d.end is not None for d in ctx.run.ranks.values())
    step_gap = max(counts.values()) - min(counts.values())
    # a run in progress may be one step apart between ranks: only a finished run's totals count
    uneven_steps = step_gap > (0 if ended else 1)
    ev: dict[str, Any] = dict(
        optimizer_steps_per_rank=counts,
        micro_steps_per_rank=micro_tot,
        steps_with_different_micro_counts=len(differ),
        threshold=threshold_sentence(fid),
    )
    if len(differ) or uneven_steps:
        first = int(differ[0]) if len(differ) else None
        return confirmed(
            fid,
            Text(
                f"Ranks ran different numbers of steps: optimizer steps {counts}; "
                f"{len(differ)} step(s) with different micro-step counts"
                + (f" (first at step {first})." if first is not None else "."),
                f"各 rank 步数不同：优化步数 {counts}；有 {len(differ)} 个步的微步数不同。",
            ),
            first_step=first,
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"All ranks ran {min(counts.values())} optimizer steps with equal micro-step counts.",
            f"所有 rank 都运行了 {min(counts.values())} 个优化步，微步数相同。",
        ),
        **ev,
    )


def _bypassed(ctx: Context) -> Finding:
    fid, p = "ddp-bypassed", ctx.sync
    records = p.steps + p.steps_single
    if ctx.world_size < 2 or records == 0:
        return (
            ruled_out(
                fid,
                Text("World size 1: no all-reduce is needed.", "world size 为 1，不需要 all-reduce。"),
                world_size=ctx.world_size,
            )
            if ctx.world_size < 2
            else not_measured(fid, Text("No optimizer step recorded yet.", "尚未记录到优化步。"), steps=0)
        )
    fsdp = ctx.config("fsdp")
    if fsdp and fsdp.get("version") == 1 and p.total_syncs == 0:
        return not_measured(
            fid,
            Text(
                "FSDP1 without a comm hook: all-reduces are not observable.",
                "FSDP1 未使用通信钩子：无法观察 all-reduce。",
            ),
            fsdp_version=1,
        )
    ev: dict[str, Any] = dict(
        all_reduces=p.total_syncs,
        step_records=records,
        world_size=ctx.world_size,
        ddp_wrapped=ctx.config("ddp") is not None,
        threshold=threshold_sentence(fid),
    )
    if p.total_syncs == 0:
        how = (
            "the DDP wrapper was built but never synced (raw module called?)"
            if ev["ddp_wrapped"]
            else "no DDP wrapper was seen"
        )
        return confirmed(
            fid,
            Text(
                f"World size {ctx.world_size} but 0 gradient all-reduces in {records} step records: {how}.",
                f"world size 为 {ctx.world_size}，但 {records} 条步记录中梯度 all-reduce 次数为 0。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"{p.total_syncs} gradient all-reduce calls in {records} step records.",
            f"{records} 条步记录中共有 {p.total_syncs} 次梯度 all-reduce。",
        ),
        **ev,
    )


def _zero_grad(ctx: Context) -> Finding:
    fid = "zero-grad-inside-accum"
    zs, ms, after = [], [], []
    for data in ctx.run.ranks.values():
        c = data.steps
        if c is not None and len(c):
            zs.append(c.zero_grad)
            ms.append(c.micro_steps)
            # calls after a backward of the same step (newer probes); nan where not recorded
            after.append(c.extra.get("zero_grad_after_backward", np.full(len(c), np.nan)))
    if not zs:
        return not_measured(fid, Text("No optimizer step recorded yet.", "尚未记录到优化步。"))
    z, m, a = np.concatenate(zs), np.concatenate(ms), np.concatenate(after)
    placed = np.isfinite(a)
    known = placed | (z >= 0)
    multi = known & (m >= 2)
    if multi.sum() == 0:
        return ruled_out(
            fid,
            Text(
                "No gradient accumulation: zeroing between micro-steps cannot happen.",
                "没有梯度累积，不会在微步之间清零。",
            ),
            multi_micro_steps=0,
        )
    # Where the probe recorded when each call came, only a call after a backward of the step wipes
    # gradients (Lightning zero-grads twice before a window's first backward: harmless). Older run
    # directories have only the count: more than one call per step.
    wipes = np.where(placed, np.nan_to_num(a) >= 1, z > 1)
    bad = multi & wipes
    ev: dict[str, Any] = dict(
        median_zero_grad_per_step=float(np.median(z[multi])),
        steps_with_extra_zero_grad=int(bad.sum()),
        multi_micro_steps=int(multi.sum()),
        threshold=threshold_sentence(fid),
    )
    if placed[multi].any():
        ev["median_zero_grad_after_backward"] = float(np.median(a[multi & placed]))
    if bad.sum() / multi.sum() > ZERO_GRAD_SHARE:
        return confirmed(
            fid,
            Text(
                f"zero_grad ran {ev['median_zero_grad_per_step']:g} times per optimizer "
                f"step (median) with {int(np.median(m[multi]))} micro-steps, between micro-steps in "
                f"{int(bad.sum())} of {int(multi.sum())} accumulation steps: only the last "
                "micro-batch reaches the update.",
                f"每个优化步调用 zero_grad {ev['median_zero_grad_per_step']:g} 次"
                f"（中位数），而微步数为 {int(np.median(m[multi]))}；{int(multi.sum())} 个累积步中有 "
                f"{int(bad.sum())} 个在微步之间清零：只有最后一个微批次参与了更新。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"no zero_grad between micro-steps in "
            f"{int(multi.sum() - bad.sum())} of {int(multi.sum())} accumulation steps.",
            f"{int(multi.sum())} 个累积步中有 {int(multi.sum() - bad.sum())} 个在微步之间没有调用 zero_grad。",
        ),
        **ev,
    )


def _unscaled(ctx: Context) -> Finding:
    fid = "accum-loss-unscaled"
    ratios, accum = [], []
    for data in ctx.run.ranks.values():
        c = data.steps
        if c is None or not len(c):
            continue
        mean = np.where(c.fn_sum, c.fn_value / np.where(c.fn_n_valid > 0, c.fn_n_valid, np.nan), c.fn_value)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = c.losses / mean
        ratios.append(r)
        accum.append(np.repeat(c.micro_steps, c.micro_steps))
    if not ratios:
        return not_measured(fid, Text("No optimizer step recorded yet.", "尚未记录到优化步。"))
    r, a = np.concatenate(ratios), np.concatenate(accum)
    ok = np.isfinite(r) & (r > 0) & (a >= 2)
    if ok.sum() == 0:
        if (a >= 2).any():
            return not_measured(
                fid,
                Text(
                    "The loss-function output was not recorded next to the backward "
                    "root (loss computed inside a compiled region, or a custom loss).",
                    "未在 backward 根节点旁记录到损失函数输出（损失在编译区域内计算或为自定义损失）。",
                ),
            )
        return ruled_out(
            fid,
            Text(
                "No gradient accumulation: there is no count to divide by.",
                "没有梯度累积，无需除以累积步数。",
            ),
            accumulation=1,
        )
    A = float(np.median(a[ok]))
    med = float(np.median(r[ok]))
    ev: dict[str, Any] = dict(
        median_root_over_loss=med,
        accumulation=A,
        root_times_accumulation=med * A,
        threshold=threshold_sentence(fid)
        + Text(
            f" (here √A = {math.sqrt(A):.3g}; 1 = divided by A, A = undivided)",
            f"（此处 √A = {math.sqrt(A):.3g}；1 = 已除以 A，A = 未除）",
        ),
    )
    if med * A >= math.sqrt(A):
        return confirmed(
            fid,
            Text(
                f"The backward root is {fmt(med)} × the loss with accumulation {A:g}: "
                f"the loss is not divided by the accumulation count (expected ≈ {1 / A:.3g}).",
                f"backward 根节点是损失的 {fmt(med)} 倍，累积步数为 {A:g}：损失没有除以累积步数"
                f"（应约为 {1 / A:.3g}）。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"The backward root is {fmt(med)} × the loss with accumulation {A:g} (≈ 1/{A:g}: divided).",
            f"backward 根节点是损失的 {fmt(med)} 倍，累积步数为 {A:g}（≈ 1/{A:g}，已正确除以累积步数）。",
        ),
        **ev,
    )
