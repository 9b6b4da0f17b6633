"""Hypothesis `logging`: is the plotted loss rank 0's alone, so it looks noisier than it is?

rank0-only-loss-log is a lint finding; at run time it is decided when the trainer's own metrics
(``trainer/metrics.jsonl`` with ``step`` and ``loss``) were captured: the logged value is compared
with rank 0's local loss and with the global loss from the probe, and it is called rank-0-only when
its median distance to the rank-0 loss is less than :data:`CLOSER` × its distance to the global
loss. The noise band's rank-0/global std ratio (≈ sqrt(world size) expected) is reported either way.
"""

from __future__ import annotations

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, not_measured, ruled_out
from ddp_doctor.findings import Finding

CLOSER = 0.1
MIN_POINTS = 10


def check(ctx: Context) -> list[Finding]:
    return [_rank0_log(ctx)]


def _rank0_log(ctx: Context) -> Finding:
    fid, s = "rank0-only-loss-log", ctx.series
    noise = dict(
        rank0_over_global_std=ctx.noise.rank0_over_global,
        expected_if_rank0_only=float(np.sqrt(ctx.world_size)),
    )
    logged = np.full(s.n_steps, np.nan)
    for rec in ctx.run.trainer_metrics:
        try:
            step, loss = int(rec["step"]), float(rec["loss"])
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= step < s.n_steps:
            logged[step] = loss
    if ctx.world_size < 2 or 0 not in s.ranks:
        return (
            ruled_out(
                fid,
                "World size 1: rank 0's loss is the global loss.",
                "world size 为 1：rank 0 的损失就是全局损失。",
                **noise,
            )
            if ctx.world_size < 2
            else not_measured(fid, "Rank 0's records are missing.", "缺少 rank 0 的记录。", **noise)
        )
    r0 = s.local_loss[s.row(0)]
    ok = np.isfinite(logged) & np.isfinite(r0) & np.isfinite(s.global_loss)
    if ok.sum() < MIN_POINTS:
        return not_measured(
            fid,
            "The script's logged loss was not captured; run `ddp-doctor lint` on the script for this check.",
            "未捕获脚本记录的损失；请对脚本运行 `ddp-doctor lint` 进行检查。",
            **noise,
        )
    d_r0 = float(np.median(np.abs(logged[ok] - r0[ok])))
    d_glob = float(np.median(np.abs(logged[ok] - s.global_loss[ok])))
    ev = dict(
        median_abs_diff_to_rank0=d_r0,
        median_abs_diff_to_global=d_glob,
        points=int(ok.sum()),
        threshold=f"distance to rank 0 < {CLOSER} × distance to global",
        **noise,
    )
    if d_r0 < CLOSER * d_glob:
        return confirmed(
            fid,
            f"The logged loss matches rank 0's local loss (median |Δ| {d_r0:.2g}) and "
            f"not the global loss (median |Δ| {d_glob:.2g}).",
            f"记录的损失与 rank 0 的本地损失一致（中位 |Δ| {d_r0:.2g}），而不是全局损失（中位 |Δ| {d_glob:.2g}）。",
            **ev,
        )
    return ruled_out(
        fid,
        f"The logged loss follows the global loss (median |Δ| {d_glob:.2g}, vs {d_r0:.2g} to rank 0's).",
        f"记录的损失与全局损失一致（中位 |Δ| {d_glob:.2g}，与 rank 0 相差 {d_r0:.2g}）。",
        **ev,
    )
