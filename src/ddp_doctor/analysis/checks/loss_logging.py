"""Hypothesis `logging`: is the plotted loss rank 0's alone, so it looks noisier than it is?

The loss the script logs is captured by the probe (probe/capture: printed lines, TensorBoard,
wandb, HF Trainer, Lightning, Fabric, accelerate) or read from the reference trainer's
metrics.jsonl, and its form is recognised by analysis/quantities/logged_loss.py: which of rank
0's micro-batch loss (÷ or × the accumulation count), its step loss, its running mean, or the
all-reduced loss it equals, value by value. rank0-only-loss-log is confirmed when a training-loss
series is recognised as a rank-local form and no all-reduced form fits it; ruled out when it is
recognised as an all-reduced form. The noise band's rank-0/global std ratio (≈ sqrt(world size)
expected) and the logged curve's own step-to-step noise relative to the global loss are reported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.analysis.quantities.logged_loss import LOCAL, LoggedSeries, logged_loss
from ddp_doctor.core.catalog import Text, threshold_sentence, threshold_text
from ddp_doctor.core.findings import Finding

# What the probe looks at for a logged loss (probe/capture); named in "not measured".
LOOKED_AT = (
    "lines printed to stdout/stderr (print, logging, tqdm)",
    "TensorBoard SummaryWriter.add_scalar",
    "wandb.log",
    "HF Trainer.log",
    "Lightning LightningModule.log / Fabric.log",
    "Accelerator.log",
)


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("rank0-only-loss-log",)


def check(ctx: Context) -> list[Finding]:
    return [_rank0_log(ctx)]


def _rank0_log(ctx: Context) -> Finding:
    fid, s = "rank0-only-loss-log", ctx.series
    noise: dict[str, Any] = dict(
        rank0_over_global_std=ctx.noise.rank0_over_global,
        expected_if_rank0_only=float(np.sqrt(ctx.world_size)),
    )
    if ctx.world_size < 2:
        return ruled_out(
            fid,
            Text(
                "World size 1: rank 0's loss is the global loss.",
                "world size 为 1：rank 0 的损失就是全局损失。",
            ),
            **noise,
        )
    if 0 not in s.ranks:
        return not_measured(fid, Text("Rank 0's records are missing.", "缺少 rank 0 的记录。"), **noise)
    found = logged_loss(ctx.run, s)
    evidence: dict[str, Any] = dict(
        logged=[x.as_evidence() for x in found.series],
        keys_seen=found.looked_at,
        threshold=threshold_sentence(fid),
        **noise,
    )
    main = found.main
    if main is None:
        seen = (
            f" Loss-like keys seen: {', '.join(found.looked_at)} (evaluation keys only)."
            if found.looked_at
            else ""
        )
        return not_measured(
            fid,
            Text(
                f"No logged training loss found (looked at {'; '.join(LOOKED_AT)}).{seen} "
                "Run `ddp-doctor lint` on the script for the static check.",
                f"未找到脚本记录的训练损失（查看了 {'；'.join(LOOKED_AT)}）。请对脚本运行 `ddp-doctor lint` 进行静态检查。",
            ),
            **evidence,
        )
    if not main.recognised:
        best = main.best
        best_text = f"best: {best.name}, {best.matched} of {main.points}" if best else "no candidate"
        return not_measured(
            fid,
            Text(
                f"The logged {main.label} ({main.points} values) matches none of the forms of the loss the probe "
                f"measured ({best_text}; needs {threshold_text(fid)}).",
                f"记录的 {main.label}（{main.points} 个值）与探针测得的任何损失形式都不匹配（{best_text}）。",
            ),
            **evidence,
        )
    best = main.best
    assert best is not None
    other = main.best_other
    other_text = (
        f"the best {other.family} form ({other.name}) matches {other.matched} of {main.points}"
        if other
        else "no other form was computed"
    )
    if not main.distinct:
        return inconclusive(
            fid,
            Text(
                f"The logged {main.label} matches {best.name} ({best.matched} of {main.points}) but also "
                f"{other_text}: rank 0's loss and the global loss coincide in this run (same data on every rank?), "
                "so they cannot be told apart.",
                f"记录的 {main.label} 与 {best.name} 一致（{best.matched}/{main.points}），但另一类形式也一致："
                "本次运行中 rank 0 的损失与全局损失重合，无法区分。",
            ),
            **evidence,
        )
    if best.family == LOCAL:
        return confirmed(fid, _local_text(main, other_text), **evidence)
    return ruled_out(
        fid,
        Text(
            f"The logged {main.label} is the all-reduced loss: {best.matched} of {main.points} values match "
            f"the {best.name}; {other_text}.",
            f"记录的 {main.label} 是 all-reduce 后的损失：{best.matched}/{main.points} 个值与 {best.name} 一致；{other_text}。",
        ),
        **evidence,
    )


def _local_text(main: LoggedSeries, other_text: str) -> Text:
    best = main.best
    assert best is not None
    who = "rank 0's" if main.rank == 0 else f"rank {main.rank}'s"
    noisier = (
        f", with {fmt(main.noise_ratio, 2)}× the global loss's step-to-step noise (relative to its level)"
        if main.noise_ratio is not None
        else ""
    )
    en = (
        f"The logged {main.label} is {who} {best.name}, not an all-reduced loss: {best.matched} of "
        f"{main.points} values match it, {other_text}. The curve you are looking at is {who} "
        f"{best.name}{noisier}."
    )
    zh_noise = (
        f"，其逐步噪声（相对其水平）是全局损失的 {fmt(main.noise_ratio, 2)} 倍"
        if main.noise_ratio is not None
        else ""
    )
    zh = (
        f"记录的 {main.label} 是 rank {main.rank} 的 {best.name}，不是 all-reduce 后的损失："
        f"{best.matched}/{main.points} 个值与之一致。你看到的曲线是 rank {main.rank} 的 {best.name}{zh_noise}。"
    )
    return Text(en, zh)
