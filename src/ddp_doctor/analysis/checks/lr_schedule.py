"""Hypothesis `lr-schedule`: warmup too short, scheduler stepped per micro-batch, lr too high.

* warmup length = the first optimizer step where the lr of group 0 reaches 99 % of its maximum.
  Minimum for Adam-type optimizers: 2 / (1 − β2) steps (Ma & Yarats 2021, "On the adequacy of
  untuned warmup for adaptive optimization"); it applies only where the recorded optimizer has
  Adam's β2 (:func:`adam_beta2`: SGD has none), and "a spike near the warmup's end" only where
  there is a warmup (w > 0). Confirmed when loss spikes start within
  max(:data:`MIN_WINDOW`, warmup/2) steps of the warmup's end, or when the warmup is shorter than
  the minimum and a spike starts before that minimum. Without spikes a short warmup alone is not a
  finding (it is reported in the evidence).
* scheduler-per-microstep: ``sched_steps`` per optimizer step equals micro-steps (≥ 2) × the
  steps one correct call makes, in most steps. That is 1, except under accelerate's
  AcceleratedScheduler with ``split_batches=False``, which steps the wrapped scheduler
  ``num_processes`` times per optimizer step on purpose (accelerate/scheduler.py), so that a
  schedule sized for one process ends on time: there a correct loop shows world-size steps.
* update-ratio-high: shared with `optimizer` (see :mod:`.optimizer`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddp_doctor.analysis.checks.optimizer import update_ratio
from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

WARMUP_REACHED = 0.99
MIN_WINDOW = int(limit("warmup-short", "min_window"))
PER_MICRO_SHARE = limit("scheduler-per-microstep", "share")


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("scheduler-per-microstep", "warmup-short", "update-ratio-high")  # the last shared with optimizer


def check(ctx: Context) -> list[Finding]:
    return [_warmup(ctx), _per_micro(ctx), update_ratio(ctx)]


def warmup_length(lr: np.ndarray, steps: np.ndarray | None = None) -> int | None:
    """The step at which the lr first reaches WARMUP_REACHED × its peak (``steps``: the step number
    of each entry of ``lr``, when they are not 0..T-1)."""
    ok = np.isfinite(lr)
    if ok.sum() < 2:
        return None
    peak = np.nanmax(lr)
    at = int(np.flatnonzero(ok & (lr >= WARMUP_REACHED * peak))[0])
    return int(steps[at]) if steps is not None else at


def adam_beta2(opt: dict[str, Any] | None) -> tuple[float | None, str]:
    """β2 of an Adam-type optimizer (its recorded group 0 has ``betas``), else None and why not.

    The 2/(1-β2) minimum is about Adam's second-moment estimate: an optimizer without a recorded
    ``betas`` pair (SGD, Adagrad, ...) has none, and Lion's β2 is a momentum, not a second moment.
    Wrappers (accelerate's AcceleratedOptimizer) expose the wrapped optimizer's groups, so the
    groups decide, not the class name alone."""
    if not opt:
        return None, "no optimizer config was recorded"
    kind = str(opt.get("type") or "?")
    groups = opt.get("groups")
    group0 = groups[0] if isinstance(groups, list) and groups and isinstance(groups[0], dict) else {}
    betas = group0.get("betas")
    if "lion" in kind.lower():
        return None, f"the optimizer is {kind}: its β2 is a momentum, not Adam's second moment"
    if not isinstance(betas, list | tuple) or len(betas) < 2:
        return None, f"the optimizer is {kind}, which has no β2 (not an Adam variant)"
    try:
        beta2 = float(betas[1])
    except (TypeError, ValueError):
        return None, f"the optimizer's betas {betas!r} are not numbers"
    if not 0.0 <= beta2 < 1.0:
        return None, f"β2 = {beta2:g} is outside [0, 1)"
    return beta2, ""


def _warmup(ctx: Context) -> Finding:
    fid = "warmup-short"
    w = warmup_length(ctx.series.lr, ctx.series.steps)
    if w is None:
        return not_measured(fid, Text("No lr trace recorded.", "未记录学习率曲线。"))
    opt = ctx.config("optimizer")
    beta2, why_not_adam = adam_beta2(opt)
    w_min = 2.0 / (1.0 - beta2) if beta2 is not None else None
    window = max(MIN_WINDOW, w // 2)
    starts = [s.step for s in ctx.loss_spikes]
    # "a spike near the end of the warmup" needs a warmup: with the lr at its peak from the first
    # step there is no warmup end, and only Adam's minimum (below) says a warmup was needed
    near = [s for s in starts if abs(s - w) <= window] if w > 0 else []
    early = [s for s in starts if s < w_min] if w_min is not None and w < w_min else []
    # the run's own numbers beside the catalog rule (why Adam's minimum may not apply: adam_rule_reason)
    minimum = f"; 2/(1−β2) = {w_min:g}" if w_min is not None else ""
    here = Text(f" (here: {window} steps{minimum})", f"（此处：{window} 步{minimum.replace('; ', '；')}）")
    ev: dict[str, Any] = dict(
        warmup_steps=w,
        min_warmup_steps=w_min,
        beta2=beta2,
        optimizer=(opt or {}).get("type"),
        adam_rule_applies=w_min is not None,
        adam_rule_reason=why_not_adam or None,
        loss_spike_steps=starts[:20],
        spikes_near_warmup_end=near[:20],
        spikes_before_min_warmup=early[:20],
        threshold=threshold_sentence(fid) + here,
    )
    if near or early:
        minimum = f" (minimum 2/(1-β2) = {w_min:g})" if w_min is not None else ""
        minimum_zh = f"（最小值 2/(1-β2) = {w_min:g}）" if w_min is not None else ""
        return confirmed(
            fid,
            Text(
                f"Warmup ends at step {w}{minimum} and loss spikes start at step(s) {(near or early)[:5]}.",
                f"warmup 在第 {w} 步结束{minimum_zh}，损失尖峰始于第 {(near or early)[:5]} 步。",
            ),
            **ev,
        )
    if w == 0 and w_min is None:
        return not_measured(
            fid,
            Text(
                f"The lr is at its peak from the first step (no warmup), and the warmup minimum "
                f"2/(1-β2) does not apply: {why_not_adam}. No rule for this optimizer's warmup is measured.",
                f"学习率从第一步起就是峰值（没有 warmup），且 warmup 最小值 2/(1-β2) 不适用：{why_not_adam}。"
                "对该优化器的 warmup 没有可用的测量规则。",
            ),
            **ev,
        )
    note = (
        f" (shorter than 2/(1-β2) = {w_min:g}, but no spike followed)"
        if w_min is not None and w < w_min
        else ""
    )
    return ruled_out(
        fid,
        Text(
            f"Warmup of {w} optimizer steps{note}; no loss spike near its end.",
            f"warmup 为 {w} 个优化步；其结束附近没有损失尖峰。",
        ),
        **ev,
    )


def _per_micro(ctx: Context) -> Finding:
    fid = "scheduler-per-microstep"
    sched = ctx.config("scheduler")
    ss, ms = [], []
    for d in ctx.run.ranks.values():
        if d.steps is not None and len(d.steps):
            ss.append(d.steps.sched_steps)
            ms.append(d.steps.micro_steps)
    if not ss:
        return not_measured(fid, Text("No optimizer step recorded yet.", "尚未记录到优化步。"))
    s, m = np.concatenate(ss), np.concatenate(ms)
    known = s >= 0
    if not known.any() or (s[known].max() == 0 and sched is None):
        return ruled_out(fid, Text("No lr scheduler was stepped.", "没有调用学习率调度器。"), scheduler=None)
    multi = known & (m >= 2)
    if not multi.any():
        return ruled_out(
            fid,
            Text(
                "No gradient accumulation: one micro-batch per optimizer step.",
                "没有梯度累积：每个优化步只有一个微批次。",
            ),
            multi_micro_steps=0,
        )
    per_call = _steps_per_call(sched, ctx.world_size)
    bad = multi & (s == m * per_call)
    lr = ctx.series.lr
    ev: dict[str, Any] = dict(
        median_sched_steps_per_optimizer_step=float(np.median(s[multi])),
        micro_steps=float(np.median(m[multi])),
        expected_per_optimizer_step=per_call,
        wrapper=(sched or {}).get("wrapper"),
        warmup_steps_from_lr=warmup_length(lr, ctx.series.steps),
        lr_first=float(lr[np.isfinite(lr)][0]) if np.isfinite(lr).any() else None,
        lr_max=float(np.nanmax(lr)) if np.isfinite(lr).any() else None,
        threshold=threshold_sentence(fid) + Text(f" (here k = {per_call})", f"（此处 k = {per_call}）"),
    )
    if bad.sum() / multi.sum() > PER_MICRO_SHARE:
        return confirmed(
            fid,
            Text(
                f"The scheduler stepped {ev['median_sched_steps_per_optimizer_step']:g} times per "
                f"optimizer step (= micro-steps × {per_call}): the schedule runs {ev['micro_steps']:g}× too fast.",
                f"每个优化步调度器步进 {ev['median_sched_steps_per_optimizer_step']:g} 次（= 微步数）："
                f"学习率计划快了 {ev['micro_steps']:g} 倍。",
            ),
            **ev,
        )
    note = f" (accelerate steps it {per_call}× per optimizer step by design)" if per_call > 1 else ""
    return ruled_out(
        fid,
        Text(
            f"The scheduler stepped {ev['median_sched_steps_per_optimizer_step']:g} time(s) per "
            f"optimizer step{note}.",
            f"每个优化步调度器步进 {ev['median_sched_steps_per_optimizer_step']:g} 次。",
        ),
        **ev,
    )


def _steps_per_call(sched: dict[str, Any] | None, world_size: int) -> int:
    """Scheduler steps one correct per-optimizer-step call makes (see the module docstring)."""
    if sched is None or sched.get("wrapper") != "AcceleratedScheduler":
        return 1
    return max(world_size, 1) if not sched.get("split_batches") else 1
