"""Hypothesis `progress`: the optimizer steps, but nothing is learned.

training-not-progressing, from four signs, each over the optimizer steps where it was measured
(exact zeros: a model that learns never has them, so there is no tolerance to choose):

* the global gradient norm (comm hook, DeepSpeed engine or clip total_norm; context.grad_norm) is
  exactly 0 — a cross-entropy over a single class (loss 0), a loss detached from the graph;
* the lr of group 0 is exactly 0 from step 1 on (step 0 may be a warmup's start at 0) — a
  scheduler that decayed to 0 or a warmup that never leaves it;
* every sampled parameter update (`update` records, probe/instruments/update_sample.py) is exactly
  0 — parameters frozen by mistake, or an optimizer built over tensors other than the model's;
* the global loss is constant: its range ≤ ``rel_range`` × its mean magnitude (a loss of exactly 0
  throughout included).

Confirmed when a sign holds on ≥ ``share`` of ≥ ``min_steps`` measured steps (update records: of
≥ :data:`MIN_UPDATE_RECORDS`). Ruled out when the gradient norm or the sampled updates were
measured and are not zero, and no sign holds; inconclusive when only the loss was measured (a
frozen model's loss still varies with the data). The trainable share of the model's parameters
(DDP config) and the optimizer's parameter count go in the evidence: they name the likely cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, coverage, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

FINDS = ("training-not-progressing",)
SHARE = limit("training-not-progressing", "share")
MIN_STEPS = int(limit("training-not-progressing", "min_steps"))
REL_RANGE = limit("training-not-progressing", "rel_range")
MIN_UPDATE_RECORDS = 3  # update records are sampled every `every` steps: a short run has few


@dataclass
class Sign:
    name: Text
    absent: str  # what was seen instead, when it does not hold
    holds_on: int  # steps (or update records) where it holds
    measured: int
    needed: int  # measured steps needed to decide

    @property
    def decided(self) -> bool:
        return self.measured >= self.needed

    @property
    def holds(self) -> bool:
        return self.decided and self.holds_on >= SHARE * self.measured

    def to_json(self) -> dict[str, Any]:
        return {"holds_on": self.holds_on, "measured": self.measured, "holds": self.holds}


def check(ctx: Context) -> list[Finding]:
    return [not_progressing(ctx)]


def _update_records(ctx: Context) -> tuple[int, int]:
    """(records whose every sampled tensor's update norm is exactly 0, records with a finite one)."""
    zero = measured = 0
    for data in ctx.run.ranks.values():
        for rec in data.records.get("update") or ():
            tensors = rec.get("tensors") if isinstance(rec, dict) else None
            norms = [t.get("update_norm") for t in tensors or () if isinstance(t, dict)]
            vals = [float(v) for v in norms if isinstance(v, int | float) and not isinstance(v, bool)]
            vals = [v for v in vals if np.isfinite(v)]
            if vals:
                measured += 1
                zero += all(v == 0.0 for v in vals)
    return zero, measured


def _setup(ctx: Context) -> dict[str, Any]:
    """What names the cause: the trainable share (DDP config) and the optimizer's parameters."""
    out: dict[str, Any] = {}
    ddp = ctx.config("ddp") or {}
    n, trainable = ddp.get("n_params"), ddp.get("n_trainable")
    if isinstance(n, int) and isinstance(trainable, int) and n > 0:
        out.update(model_params=n, trainable_params=trainable, trainable_share=trainable / n)
    if isinstance(ddp.get("n_trainable_numel"), int):
        out["trainable_numel"] = ddp["n_trainable_numel"]
    opt = ctx.config("optimizer") or {}
    groups = [g for g in opt.get("groups") or () if isinstance(g, dict)]
    if groups:
        out["optimizer"] = opt.get("type")
        out["optimizer_params"] = sum(int(g.get("n_params") or 0) for g in groups)
        out["optimizer_numel"] = sum(int(g.get("numel") or 0) for g in groups)
    return out


def _causes(setup: dict[str, Any]) -> Text:
    en, zh = [], []
    share = setup.get("trainable_share")
    if share is not None and share < 0.5:
        en.append(f"only {setup['trainable_params']} of {setup['model_params']} parameters require grad")
        zh.append(f"{setup['model_params']} 个参数中只有 {setup['trainable_params']} 个需要梯度")
    numel, model = setup.get("optimizer_numel"), setup.get("trainable_numel")
    if isinstance(numel, int) and isinstance(model, int) and model > 0 and numel < 0.5 * model:
        en.append(f"the optimizer holds {numel} elements while the model trains {model}")
        zh.append(f"优化器持有 {numel} 个元素，而模型可训练 {model} 个")
    if not en:
        return Text("", "")
    return Text(" Likely cause: " + "; ".join(en) + ".", " 可能原因：" + "；".join(zh) + "。")


def not_progressing(ctx: Context) -> Finding:
    fid = "training-not-progressing"
    g = ctx.grad_norm
    g_ok = np.isfinite(g)
    lr = ctx.series.lr[1:]
    lr_ok = np.isfinite(lr)
    up_zero, up_measured = _update_records(ctx)
    loss = np.where(ctx.series.skipped, np.nan, ctx.series.global_loss)
    loss = loss[np.isfinite(loss)]
    level = float(np.mean(np.abs(loss))) if loss.size else 0.0
    spread = float(np.ptp(loss)) if loss.size else 0.0
    constant = loss.size >= MIN_STEPS and spread <= REL_RANGE * level
    signs = {
        "gradient": Sign(
            Text("the global gradient norm is exactly 0", "全局梯度范数恰为 0"),
            "gradient norm not 0",
            int((g[g_ok] == 0).sum()),
            int(g_ok.sum()),
            MIN_STEPS,
        ),
        "lr": Sign(
            Text("the lr is exactly 0", "学习率恰为 0"),
            "lr not 0",
            int((lr[lr_ok] == 0).sum()),
            int(lr_ok.sum()),
            MIN_STEPS,
        ),
        "updates": Sign(
            Text("every sampled parameter update is exactly 0", "所有抽样的参数更新恰为 0"),
            "parameter updates not 0",
            up_zero,
            up_measured,
            MIN_UPDATE_RECORDS,
        ),
        "loss": Sign(
            Text("the loss is constant", "损失保持不变"),
            f"loss range {fmt(spread)}",
            int(loss.size) if constant else 0,
            int(loss.size),
            MIN_STEPS,
        ),
    }
    setup = _setup(ctx)
    ev: dict[str, Any] = dict(
        signs={k: s.to_json() for k, s in signs.items()},
        grad_norm_source=ctx.grad_norm_source,
        loss_range=spread if loss.size else None,
        loss_mean_magnitude=level if loss.size else None,
        threshold=threshold_sentence(fid),
        **setup,
    )
    held = [s for s in signs.values() if s.holds]
    if held:
        parts = [
            f"{s.name.en} on {s.holds_on} of {s.measured} {_unit(k)}" for k, s in signs.items() if s.holds
        ]
        parts_zh = [f"{s.name.zh}（{s.measured} 个中的 {s.holds_on} 个）" for s in held]
        if signs["loss"].holds:
            parts[-1] += f" (range {fmt(spread)} around {fmt(level)})"
        cause = _causes(setup)
        return confirmed(
            fid,
            Text(
                "Training does not progress: " + "; ".join(parts) + "." + cause.en,
                "训练没有进展：" + "；".join(parts_zh) + "。" + cause.zh,
            ),
            **ev,
        )
    if not any(s.decided for s in signs.values()):
        return not_measured(
            fid,
            Text(
                f"Needs ≥ {MIN_STEPS} optimizer steps with a gradient norm, lr or loss, or ≥ "
                f"{MIN_UPDATE_RECORDS} sampled updates.",
                f"需要至少 {MIN_STEPS} 个有梯度范数、学习率或损失的优化步，或至少 {MIN_UPDATE_RECORDS} 次抽样更新。",
            ),
            **ev,
        )
    moved = [k for k in ("gradient", "updates") if signs[k].decided]
    measured_text = "; ".join(
        f"{s.absent} on {s.measured - s.holds_on} of {s.measured} {_unit(k)}"
        for k, s in signs.items()
        if s.decided and k != "loss"
    )
    if signs["loss"].decided:
        measured_text += f"{'; ' if measured_text else ''}loss range {fmt(spread)} around {fmt(level)}"
    if not moved:
        return inconclusive(
            fid,
            Text(
                f"Neither gradient norms nor parameter updates were recorded; {measured_text} — a frozen model's "
                "loss still varies with the data.",
                "没有记录梯度范数或参数更新；仅凭损失无法判断——被冻结的模型的损失仍随数据变化。",
            ),
            **ev,
        )
    steps = max(signs[k].measured for k in ("gradient", "lr", "loss"))
    return ruled_out(
        fid,
        Text(
            f"The model changes: {measured_text}.", "模型在变化：梯度/更新不为零，学习率不为零，损失在变化。"
        ),
        coverage=coverage(
            min(steps, ctx.optimizer_steps), ctx.optimizer_steps, Text("steps measured", "已测量的步")
        ),
        **ev,
    )


def _unit(key: str) -> str:
    return "sampled update records" if key == "updates" else "steps"
