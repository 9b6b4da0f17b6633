"""Hypothesis `precision`: fp16 loss-scale overflow/underflow, NaN/Inf.

* fp16-overflow: a GradScaler normally skips a few steps at the start while the scale (2^16 by
  default) backs off to a representable value (PyTorch AMP docs, "GradScaler": "it's possible a
  scale value that is too large ... skipped iterations"). That start ends at the first step that
  is not skipped, or at :data:`SETTLE_STEPS` at the latest. Confirmed when, after it, at least
  :data:`MIN_SKIPS` steps and :data:`MIN_SKIP_SHARE` of the steps were skipped — or when no step
  at all got through (≥ :data:`MIN_SKIPS` steps, every one skipped: the model never trained).
* fp16-no-scaler: float16 autocast seen (config or step records) and no enabled GradScaler.
* nonfinite: a NaN/Inf loss on any rank, or a non-finite gradient the GradScaler did not handle
  (not on a skipped step). First step, rank and parameter/bucket are reported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

SETTLE_STEPS = int(limit("fp16-overflow", "settle"))
MIN_SKIPS = int(limit("fp16-overflow", "min_skips"))
MIN_SKIP_SHARE = limit("fp16-overflow", "min_share")


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("fp16-overflow", "fp16-no-scaler", "nonfinite")


def check(ctx: Context) -> list[Finding]:
    return [_overflow(ctx), _no_scaler(ctx), _nonfinite(ctx)]


def _has_scaler(ctx: Context) -> bool:
    cfg = ctx.config("scaler")
    return bool(cfg and cfg.get("enabled", True)) or bool(np.isfinite(ctx.series.scale).any())


def _scaler_name(ctx: Context) -> Text:
    """Who skips steps on overflow: a GradScaler, or a DeepSpeed engine's own loss scaler."""
    ds = ctx.config("deepspeed")
    if ds and ds.get("fp16"):
        return Text("DeepSpeed's loss scaler", "DeepSpeed 的损失缩放器")
    return Text("The GradScaler", "GradScaler")


def _overflow(ctx: Context) -> Finding:
    fid = "fp16-overflow"
    name = _scaler_name(ctx)
    if not _has_scaler(ctx):
        return ruled_out(
            fid,
            Text(
                "No GradScaler in use: there is no loss scale to overflow.",
                "未使用 GradScaler：不存在会溢出的损失缩放。",
            ),
            scaler=False,
        )
    s = ctx.series
    skipped = np.flatnonzero(s.skipped)
    good = np.flatnonzero(~np.asarray(s.skipped, dtype=bool))
    settle = min(int(good[0]) if good.size else s.n_steps, SETTLE_STEPS)
    late = skipped[skipped >= settle]
    # every skipped step is read raw on the rollup path (its window is flagged): the share is of the run's steps
    n_late = max(1, ctx.steps_total - settle)
    scale = s.scale[np.isfinite(s.scale)]
    ev: dict[str, Any] = dict(
        skipped_steps=int(skipped.size),
        skipped_after_settle=int(late.size),
        first_skipped=[s.step_of(int(x)) for x in skipped[:20]],
        settled_at=settle,
        scale_min=float(scale.min()) if scale.size else None,
        scale_max=float(scale.max()) if scale.size else None,
        scale_last=float(scale[-1]) if scale.size else None,
        threshold=threshold_sentence(fid),
    )
    if not good.size and skipped.size >= MIN_SKIPS:
        return confirmed(
            fid,
            Text(
                f"{name.en} skipped all {skipped.size} steps (scale {ev['scale_max']:g} → "
                f"{ev['scale_min']:g}): no optimizer step was applied.",
                f"{name.zh} 跳过了全部 {skipped.size} 步（缩放系数 {ev['scale_max']:g} → "
                f"{ev['scale_min']:g}）：没有任何优化步生效。",
            ),
            **ev,
        )
    if late.size >= MIN_SKIPS and late.size / n_late >= MIN_SKIP_SHARE:
        return confirmed(
            fid,
            Text(
                f"{name.en} skipped {late.size} steps after step {settle} "
                f"({late.size / n_late:.1%}); scale went down to {ev['scale_min']:g}.",
                f"{name.zh} 在第 {settle} 步之后跳过了 {late.size} 步（{late.size / n_late:.1%}）；"
                f"缩放系数降到 {ev['scale_min']:g}。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"{skipped.size} skipped step(s), {late.size} after step {settle}.",
            f"共跳过 {skipped.size} 步，其中第 {settle} 步之后 {late.size} 步。",
        ),
        **ev,
    )


def _no_scaler(ctx: Context) -> Finding:
    fid = "fp16-no-scaler"
    dtypes: set[str] = set()
    cfg = ctx.config("autocast")
    if cfg and cfg.get("dtype"):
        dtypes.add(str(cfg["dtype"]))
    for d in ctx.run.ranks.values():
        if d.steps is not None:
            dtypes |= d.steps.autocast
    fp16 = any(t == "float16" or t.endswith(".float16") or t == "half" for t in dtypes)
    ev: dict[str, Any] = dict(
        autocast_dtypes=sorted(dtypes),
        scaler=_has_scaler(ctx),
        threshold=threshold_sentence(fid),
    )
    if fp16 and not ev["scaler"]:
        return confirmed(
            fid,
            Text(
                "float16 autocast ran without a GradScaler.", "在 float16 autocast 下训练却没有 GradScaler。"
            ),
            **ev,
        )
    what = "No autocast" if not dtypes else f"Autocast {sorted(dtypes)}"
    what_zh = "未使用 autocast" if not dtypes else f"autocast {sorted(dtypes)}"
    return ruled_out(
        fid,
        Text(
            f"{what}{' with a GradScaler' if ev['scaler'] else ''}.",
            f"{what_zh}{'，并使用了 GradScaler' if ev['scaler'] else ''}。",
        ),
        **ev,
    )


def _nonfinite(ctx: Context) -> Finding:
    fid = "nonfinite"
    events = []
    skipped = ctx.series.skipped
    for r, d in sorted(ctx.run.ranks.items()):
        c = d.steps
        if c is None or not len(c):
            continue
        for step, rec in c.nonfinite:
            at, on = ctx.series.pos(np.asarray([step]))
            handled = rec.get("where") == "grad" and bool(on[0]) and bool(skipped[at[0]])
            if not handled:
                events.append((step, r, rec))
        bad = c.loss_nonfinite  # recorded non-finite values, not values missing or damaged
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            step = int(np.repeat(c.step, c.micro_steps)[i])
            events.append(
                (
                    step,
                    r,
                    {
                        "where": "loss",
                        "micro": int(i - c.offsets[np.searchsorted(c.offsets, i, side="right") - 1]),
                    },
                )
            )
    if not any(d.steps is not None and len(d.steps) for d in ctx.run.ranks.values()):
        return not_measured(fid, Text("No optimizer step recorded yet.", "尚未记录到优化步。"))
    if events:
        step, rank, rec = min(events, key=lambda e: (e[0], e[1]))
        where = rec.get("param") or (f"bucket {rec['bucket']}" if rec.get("bucket") is not None else None)
        loc = f" in {where}" if where else ""
        return confirmed(
            fid,
            Text(
                f"First non-finite {rec.get('where', 'value')} at step {step} on rank {rank}{loc}.",
                f"首个非有限值（{rec.get('where', 'value')}）出现在第 {step} 步、rank {rank}{loc}。",
            ),
            first_step=step,
            rank=rank,
            where=rec.get("where"),
            parameter=rec.get("param"),
            bucket=rec.get("bucket"),
            events=len(events),
            threshold=threshold_sentence(fid),
        )
    return ruled_out(
        fid,
        Text(
            "No NaN/Inf in losses or gradients (outside GradScaler-skipped steps).",
            "损失和梯度中没有 NaN/Inf（GradScaler 跳过的步除外）。",
        ),
        threshold=threshold_sentence(fid),
    )
