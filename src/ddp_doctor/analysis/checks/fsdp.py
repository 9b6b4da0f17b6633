"""Finding `fsdp-clip-wrong` (no hypothesis of its own): clip_grad_norm_ on a sharded FSDP1 model.

`torch.nn.utils.clip_grad_norm_` on an FSDP1 model whose parameters are sharded (shard group > 1)
computes each rank's norm over its own shard only, so each rank clips by a different, too small
norm; `FullyShardedDataParallel.clip_grad_norm_` all-reduces the shard norms first. The probe
names the clip function used on an FSDP1 run (`config`/`fsdp_clip`, instruments/fsdp1.py) and
records each call's total norm; the evidence is the per-rank norms beside the full gradient's
norm √(Σ_ranks ‖shard‖² / replicas) (quantities/sharding.py). Runs recorded before the probe
named the function stay inconclusive (the lint rule decides them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, fmt, inconclusive, ruled_out
from ddp_doctor.core.catalog import Text, threshold_sentence
from ddp_doctor.core.findings import Finding
from ddp_doctor.rundir.reader import CLIP_COLUMNS

TORCH_CLIP = "torch.nn.utils.clip_grad_norm_"  # = probe/instruments/fsdp1.py (not imported: no torch)
FSDP_METHOD = "FullyShardedDataParallel.clip_grad_norm_"
MAX_RANKS_SHOWN = 8


def _clip_functions(ctx: Context) -> set[str]:
    return {
        str(rec.get("function"))
        for data in ctx.run.ranks.values()
        for rec in data.configs
        if rec.get("what") == "fsdp_clip"
    }


def _first_clip_norms(ctx: Context) -> tuple[int | None, dict[int, float]]:
    """The first step with a clip call, and each rank's first total norm at that step."""
    steps = [
        int(d.steps.clip_step.min())
        for d in ctx.run.ranks.values()
        if d.steps is not None and len(d.steps.clip_step)
    ]
    if not steps:
        return None, {}
    step = min(steps)
    col = CLIP_COLUMNS.index("total_norm")
    norms = {}
    for rank in sorted(ctx.run.ranks):
        cols = ctx.run.ranks[rank].steps
        if cols is None:
            continue
        rows = np.flatnonzero(cols.clip_step == step)
        if rows.size:
            norms[rank] = float(cols.clip[rows[0], col])
    return step, norms


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("fsdp-clip-wrong",)


def check(ctx: Context) -> list[Finding]:
    fid, cfg = "fsdp-clip-wrong", ctx.config("fsdp")
    if cfg is None or cfg.get("version") != 1:
        return [
            ruled_out(
                fid,
                Text(
                    "No FSDP1 model: the FSDP1 clipping pitfall cannot occur.",
                    "没有 FSDP1 模型：不会出现 FSDP1 的裁剪问题。",
                ),
                fsdp_version=cfg.get("version") if cfg else None,
            )
        ]
    clips = sum(len(d.steps.clip_step) for d in ctx.run.ranks.values() if d.steps is not None)
    if clips == 0:
        return [
            ruled_out(
                fid,
                Text("FSDP1 without gradient clipping.", "FSDP1 未使用梯度裁剪。"),
                fsdp_version=1,
                clip_calls=0,
            )
        ]
    functions = _clip_functions(ctx)
    shard = cfg.get("shard_group_size")
    step, norms = _first_clip_norms(ctx)
    full = float(ctx.grad_norm[step]) if step is not None and 0 <= step < len(ctx.grad_norm) else math.nan
    shown = dict(list(norms.items())[:MAX_RANKS_SHOWN])
    evidence: dict[str, Any] = dict(
        fsdp_version=1,
        clip_calls=clips,
        clip_functions=sorted(functions),
        sharding_strategy=cfg.get("sharding_strategy"),
        shard_group_size=shard,
        step=step,
        rank_clip_norms={str(r): v for r, v in shown.items()},
        full_grad_norm=full if math.isfinite(full) else None,
        threshold=threshold_sentence(fid),
        source="config/fsdp_clip and step.clip records (probe/instruments/fsdp1.py)",
    )
    listed = ", ".join(f"rank {r} {fmt(v)}" for r, v in shown.items())
    if TORCH_CLIP in functions and isinstance(shard, int) and shard > 1:
        return [
            confirmed(
                fid,
                Text(
                    f"{TORCH_CLIP} on an FSDP1 model sharded over {shard} ranks ({cfg.get('sharding_strategy')}): "
                    f"at step {step} each rank clipped by its own shard's norm ({listed}) while the full "
                    f"gradient's norm was {fmt(full)}; the ranks apply different, too weak clipping.",
                    f"在分片到 {shard} 个 rank 的 FSDP1 模型上调用了 {TORCH_CLIP}：第 {step} 步每个 rank 按自己分片的范数裁剪"
                    f"（{listed}），而完整梯度的范数为 {fmt(full)}；各 rank 的裁剪不同且偏弱。",
                ),
                **evidence,
            )
        ]
    if (functions and TORCH_CLIP not in functions) or (TORCH_CLIP in functions and shard == 1):
        why = (
            f"clipped with {FSDP_METHOD} (shard norms all-reduced)"
            if TORCH_CLIP not in functions
            else f"{TORCH_CLIP} on unsharded parameters (shard group of 1: {cfg.get('sharding_strategy')})"
        )
        return [
            ruled_out(
                fid,
                Text(
                    f"FSDP1 {why}: at step {step} the ranks clipped by {listed} (full gradient norm {fmt(full)}).",
                    f"FSDP1 裁剪方式正确（{why}）：第 {step} 步各 rank 的裁剪范数为 {listed}（完整梯度范数 {fmt(full)}）。",
                ),
                **evidence,
            )
        ]
    return [
        inconclusive(
            fid,
            Text(
                f"FSDP1 with {clips} clip calls: which clip function was used is not "
                "visible in this run directory; run `ddp-doctor lint` on the script.",
                f"FSDP1 下有 {clips} 次裁剪调用：此运行目录中看不出使用的是哪个裁剪函数；请运行 `ddp-doctor lint`。",
            ),
            **evidence,
        )
    ]
