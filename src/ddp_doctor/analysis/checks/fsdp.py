"""Finding `fsdp-clip-wrong` (no hypothesis of its own): each rank clips by its own shard's norm.

FSDP1: `torch.nn.utils.clip_grad_norm_` on an FSDP1 model whose parameters are sharded (shard
group > 1) computes each rank's norm over its own shard only, so each rank clips by a different,
too small norm; `FullyShardedDataParallel.clip_grad_norm_` all-reduces the shard norms first. The
probe names the clip function used on an FSDP1 run (`config`/`fsdp_clip`, instruments/fsdp1.py)
and records each call's total norm; the evidence is the per-rank norms beside the full gradient's
norm √(Σ_ranks ‖shard‖² / replicas) (quantities/sharding.py). Runs recorded before the probe
named the function stay inconclusive (the lint rule decides them).

FSDP2 (DTensor gradients): `torch.nn.utils.clip_grad_norm_` on the DTensors is correct (the norm
is a partial DTensor, all-reduced before it scales anything), but a clip written by hand over
`p.grad.to_local()` — or any code that scales the local shards — makes each rank clip by its
own shard's norm, and no clip call need be visible. So it is measured from what every clip does
to the gradient: at the probe's `gradsync` steps each rank records Σ‖g‖² of its shards when the
step's last synced backward returned (`sq_reduced`; older runs: the step record's shard norm
after the reduce-scatter when only one micro-step synced) and at optimizer.step() (`sq_step`,
instruments/stepgrads.py). c_r = √(sq_step / sq_reduced) is rank r's clip coefficient: one value
on every rank for a clip by the full norm, max_norm/‖shard_r‖ per rank for a clip by the shard's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, coverage, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.analysis.quantities.sharding import shard_replicas
from ddp_doctor.analysis.quantities.shards import combine_clip
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding
from ddp_doctor.rundir.reader import CLIP_COLUMNS

TORCH_CLIP = "torch.nn.utils.clip_grad_norm_"  # = probe/instruments/fsdp1.py (not imported: no torch)
FSDP_METHOD = "FullyShardedDataParallel.clip_grad_norm_"
MAX_RANKS_SHOWN = 8
COEF_SPREAD = limit("fsdp-clip-wrong", "coef_spread")
FSDP2_SOURCE = (
    "gradsync records (sq_reduced: Σ‖local grad‖² after the step's last synced backward, sq_step: at "
    "optimizer.step(); probe/instruments/stepgrads.py) at steps 0-2 and every 10 × every"
)


@dataclass
class ClipCoefficients:
    """One measured step of an FSDP2 run: each rank's shard norm before and after whatever scaled it."""

    step: int
    before: dict[int, float]  # rank -> ‖shard‖ when the last synced backward returned
    after: dict[int, float]  # rank -> ‖shard‖ at optimizer.step()
    source: str  # "sq_reduced" or "grad_sq_global" (older runs, one synced micro-step)

    @property
    def coef(self) -> dict[int, float]:
        return {r: self.after[r] / self.before[r] for r in self.before}

    @property
    def spread(self) -> float:
        """max/min − 1 of the ranks' coefficients."""
        c = list(self.coef.values())
        return max(c) / min(c) - 1.0 if c and min(c) > 0 else math.inf

    def full_norm(self, replicas: int) -> float:
        return math.sqrt(sum(v * v for v in self.before.values()) / max(replicas, 1))


def _positive(v: Any) -> float | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    return float(v) if ok else None


def _single_sync_global(ctx: Context, rank: int, step: int) -> float | None:
    """The step record's shard ‖·‖² after the reduce-scatter, when exactly one micro-step synced."""
    cols = ctx.run.ranks[rank].steps
    if cols is None:
        return None
    rows = np.flatnonzero(cols.step == step)
    if rows.size != 1:
        return None
    lo, hi = int(cols.offsets[rows[0]]), int(cols.offsets[rows[0] + 1])
    synced = [i for i in range(lo, hi) if cols.sync[i] > 0]
    return _positive(float(cols.grad_sq_global[synced[0]])) if len(synced) == 1 else None


def fsdp2_coefficients(ctx: Context) -> list[ClipCoefficients]:
    """The steps every rank measured, with each rank's shard norm before and after (FSDP2)."""
    found: dict[int, dict[int, tuple[float, float, str]]] = {}
    for rank, data in ctx.run.ranks.items():
        for rec in data.records.get("gradsync", []):
            step, after = rec.get("step"), _positive(rec.get("sq_step"))
            if not isinstance(step, int) or isinstance(step, bool) or after is None:
                continue
            before, source = _positive(rec.get("sq_reduced")), "sq_reduced"
            if before is None:
                before, source = _single_sync_global(ctx, rank, step), "grad_sq_global"
            if before is not None:
                found.setdefault(step, {})[rank] = (before, after, source)
    out = []
    for step, by_rank in sorted(found.items()):
        if len(by_rank) != ctx.run.world_size or len(by_rank) < 2:
            continue  # a rank's value missing: the ranks cannot be compared at this step
        out.append(
            ClipCoefficients(
                step,
                {r: math.sqrt(v[0]) for r, v in sorted(by_rank.items())},
                {r: math.sqrt(v[1]) for r, v in sorted(by_rank.items())},
                "sq_reduced" if all(v[2] == "sq_reduced" for v in by_rank.values()) else "grad_sq_global",
            )
        )
    return out


def _clips_by_step(ctx: Context) -> dict[int, tuple[float, float]]:
    """step -> (max_norm, total norm) of the lowest rank's first clip_grad_norm_ call (a partial
    DTensor's shards combined across ranks; torch 2.13 returns the all-reduced total on DTensors)."""
    if not ctx.run.ranks:
        return {}
    steps, clip = combine_clip(ctx.run)
    col_max, col_total = CLIP_COLUMNS.index("max_norm"), CLIP_COLUMNS.index("total_norm")
    out: dict[int, tuple[float, float]] = {}
    for step, row in zip(steps.tolist(), clip):
        if math.isfinite(row[col_max]) and int(step) not in out:
            out[int(step)] = (float(row[col_max]), float(row[col_total]))
    return out


def _ranks_text(values: dict[int, float]) -> str:
    return ", ".join(f"rank {r} {fmt(v, 4)}" for r, v in list(values.items())[:MAX_RANKS_SHOWN])


def _rank_values(values: dict[int, float]) -> dict[str, float]:
    return {str(r): v for r, v in list(values.items())[:MAX_RANKS_SHOWN]}


def check_fsdp2(ctx: Context, cfg: dict[str, Any]) -> Finding:
    """FSDP2: the ranks' clip coefficients at the measured steps (module docstring)."""
    fid = "fsdp-clip-wrong"
    measured = fsdp2_coefficients(ctx)
    clips = _clips_by_step(ctx)
    replicas = shard_replicas(cfg) or 1
    first_clip = clips[min(clips)] if clips else None
    evidence: dict[str, Any] = dict(
        fsdp_version=2,
        steps_measured=[m.step for m in measured],
        clip_calls_at_steps=sorted(clips)[:20],
        threshold=threshold_sentence(fid),
        source=FSDP2_SOURCE,
    )
    clip_en = clip_zh = ""
    if first_clip is not None:
        clip_en = (
            f"a clip_grad_norm_ call (max_norm {fmt(first_clip[0])}, total norm {fmt(first_clip[1], 4)})"
        )
        clip_zh = f"clip_grad_norm_ 调用（max_norm {fmt(first_clip[0])}，总范数 {fmt(first_clip[1], 4)}）"
    if not measured:
        single = ctx.run.world_size < 2
        why_en = (
            "a single rank: nothing to compare"
            if single
            else "no step where every rank recorded its gradient norm after the backward and at "
            "optimizer.step() (gradsync records with sq_step: an older probe, or no complete step)"
        )
        why_zh = (
            "只有一个 rank：无可比较"
            if single
            else "没有任何一步在每个 rank 上同时记录了 backward 之后与 optimizer.step() 时的梯度范数"
            "（含 sq_step 的 gradsync 记录：探针版本较旧或没有完整的步）"
        )
        if clip_en:
            why_en += f"; {clip_en} was seen: correct on the DTensor parameters, wrong on local shards"
            why_zh += f"；看到了{clip_zh}：在 DTensor 参数上正确，在本地分片上错误"
        return not_measured(
            fid, Text(f"FSDP2: each rank's clip coefficient is not measured: {why_en}.",
            f"FSDP2：各 rank 的裁剪系数未测量：{why_zh}。"), **evidence,
        )  # fmt: skip
    worst = max(measured, key=lambda m: m.spread)
    if worst.spread > COEF_SPREAD:
        return _per_shard(fid, worst, replicas, evidence)
    steps = ", ".join(str(m.step) for m in measured)
    n = max(ctx.optimizer_steps, len(measured))
    # the clip code runs the same way at every step: one step where it acted (or computed the full
    # norm) with one coefficient on every rank decides it for the run
    acted = [m for m in measured if max(m.coef.values()) < 1.0 - COEF_SPREAD]
    full_norm = [
        m for m in measured
        if m.step in clips and abs(clips[m.step][1] / m.full_norm(replicas) - 1.0) <= COEF_SPREAD
    ]  # fmt: skip
    shown = (acted or full_norm or measured)[0]
    full = shown.full_norm(replicas)
    evidence.update(
        step=shown.step,
        coefficient_spread=shown.spread,
        rank_coefficients=_rank_values(shown.coef),
        rank_shard_norms=_rank_values(shown.before),
        rank_norms_at_step=_rank_values(shown.after),
        full_grad_norm=full,
        norm_source=shown.source,
    )
    coefs = f"{_ranks_text(shown.coef)}; spread {shown.spread:.2g} ≤ {COEF_SPREAD:.0%}"
    call_en = call_zh = ""
    if shown.step in clips:
        m_norm, total = clips[shown.step]
        coef = min(1.0, m_norm / (full + 1e-6))
        evidence.update(clip_max_norm=m_norm, clip_total_norm=total, full_norm_coefficient=coef)
        call_en = (
            f"; the clip call's total norm {fmt(total, 4)} vs the full gradient's norm {fmt(full, 4)}: "
            f"max_norm {fmt(m_norm)} gives {fmt(coef, 4)}"
        )
        call_zh = f"；裁剪调用的总范数 {fmt(total, 4)}，完整梯度范数 {fmt(full, 4)}：max_norm {fmt(m_norm)} 给出 {fmt(coef, 4)}"
    if acted or full_norm:
        what_en = "scaled its gradient shard by the same factor" if acted else "kept its gradient shard"
        what_zh = "以相同的系数缩放了梯度分片" if acted else "保持梯度分片不变"
        return ruled_out(
            fid,
            Text(f"FSDP2: at step {shown.step} every rank {what_en} ({coefs}){call_en}: the clip uses the "
            f"whole gradient's norm (full norm {fmt(full, 4)}); steps measured: {steps}.",
            f"FSDP2：第 {shown.step} 步每个 rank {what_zh}（{coefs}）{call_zh}：裁剪使用整个梯度的范数"
            f"（完整范数 {fmt(full, 4)}）；测量的步：{steps}。"),
            coverage=coverage(
                n, n, Text(f"the clip code measured at step {shown.step} runs the same way at every step",
                f"第 {shown.step} 步测得的裁剪代码在每一步的行为相同"),
            ),
            **evidence,
        )  # fmt: skip
    seen_en = f"{clip_en} that never acted there" if clip_en else "no clip call seen"
    seen_zh = f"{clip_zh}在这些步上未生效" if clip_zh else "未见裁剪调用"
    return ruled_out(
        fid,
        Text(f"FSDP2: no rank's gradient changed between the backward and optimizer.step() at the measured "
        f"steps ({seen_en}; {coefs} at step {shown.step}); steps measured: {steps}.",
        f"FSDP2：在测量的步上，各 rank 的梯度在 backward 与 optimizer.step() 之间都未被改变（{seen_zh}；第 "
        f"{shown.step} 步 {coefs}）；测量的步：{steps}。"),
        coverage=coverage(
            len(measured), n, Text("steps where each rank's coefficient was measured: " + steps,
            "测量了各 rank 系数的步：" + steps),
        ),
        **evidence,
    )  # fmt: skip


def _per_shard(fid: str, m: ClipCoefficients, replicas: int, evidence: dict[str, Any]) -> Finding:
    """Confirmed: the ranks scaled their shards by different factors at step m.step."""
    full = m.full_norm(replicas)
    evidence.update(
        step=m.step,
        coefficient_spread=m.spread,
        rank_coefficients=_rank_values(m.coef),
        rank_shard_norms=_rank_values(m.before),
        rank_norms_at_step=_rank_values(m.after),
        full_grad_norm=full,
        norm_source=m.source,
    )
    clipped = [v for r, v in m.after.items() if m.coef[r] < 1.0 - COEF_SPREAD]
    tail_en = tail_zh = ""
    if len(clipped) >= 2 and max(clipped) / min(clipped) - 1.0 <= COEF_SPREAD:
        evidence["per_shard_max_norm"] = clipped[0]
        tail_en = (
            f"; every clipped rank's shard ends at norm {fmt(clipped[0], 4)} — the clip's max_norm, "
            "applied to each shard's own norm"
        )
        tail_zh = f"；每个被裁剪 rank 的分片范数最终都为 {fmt(clipped[0], 4)} — 即 max_norm 被套用在各分片自己的范数上"
    coefs = f"{_ranks_text(m.coef)}; spread {m.spread:.3g} > {COEF_SPREAD:.0%}"
    return confirmed(
        fid,
        Text(
            f"FSDP2: at step {m.step} the ranks scaled their gradient shards by different factors between "
            f"the backward and optimizer.step() ({coefs}) while the shard norms were {_ranks_text(m.before)} "
            f"and the full gradient's norm {fmt(full, 4)}{tail_en}: each rank clipped by its own shard's "
            "norm (e.g. a clip over `p.grad.to_local()`).",
            f"FSDP2：第 {m.step} 步在 backward 与 optimizer.step() 之间，各 rank 以不同的系数缩放了自己的梯度分片"
            f"（{coefs}），而分片范数为 {_ranks_text(m.before)}，完整梯度范数为 {fmt(full, 4)}{tail_zh}：每个 rank "
            "按自己分片的范数裁剪（例如在 `p.grad.to_local()` 上手写的裁剪）。",
        ),
        **evidence,
    )


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
    if cfg is not None and cfg.get("version") == 2:
        return [check_fsdp2(ctx, cfg)]
    if cfg is None or cfg.get("version") != 1:
        return [
            ruled_out(
                fid,
                Text(
                    "No FSDP model: gradients are not sharded, so no rank can clip by a shard's norm.",
                    "没有 FSDP 模型：梯度未分片，不会有 rank 按分片的范数裁剪。",
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
