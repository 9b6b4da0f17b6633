"""Hypothesis `loss-normalization`: loss averaged per micro-batch while token counts vary.

Let ρ_i = backward root / loss-function mean of micro-batch i, n_i its valid tokens. Within one
optimizer step (all ranks, all micro-steps):
* a loss normalised by the global token count gives ρ_i ∝ n_i (ρ/n constant);
* a per-micro-batch mean (divided by A) gives ρ_i constant, so each micro-batch weighs the same and
  a token in micro-batch i weighs n̄/n_i times its correct share.
The check compares the mean within-step coefficient of variation (CV) of ρ with that of ρ/n, and
needs the token counts to vary (CV(n) > :data:`TOKEN_CV_MIN`; below that both normalisations agree).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, not_measured, ruled_out
from ddp_doctor.core.catalog import limit, threshold_sentence
from ddp_doctor.core.findings import Finding

TOKEN_CV_MIN = limit("loss-normalization-variable-tokens", "token_cv")
CV_RATIO = limit("loss-normalization-variable-tokens", "cv_ratio")  # CV(ρ) < this × CV(ρ/n): ρ is constant


def _within_step_cv(x: np.ndarray, step: np.ndarray, T: int, cnt: np.ndarray) -> float:
    """Mean over steps (≥ 2 values) of the CV of x within the step; ``cnt`` values per step."""
    s1 = np.bincount(step, weights=x, minlength=T)
    s2 = np.bincount(step, weights=x * x, minlength=T)
    ok = cnt >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1[ok] / cnt[ok]
        var = np.clip(s2[ok] / cnt[ok] - mean * mean, 0, None)
        cv = np.sqrt(var) / np.abs(mean)
    cv = cv[np.isfinite(cv)]
    return float(np.mean(cv)) if cv.size else float("nan")


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("loss-normalization-variable-tokens",)


def check(ctx: Context) -> list[Finding]:
    fid = "loss-normalization-variable-tokens"
    rho, n, step = [], [], []
    for d in ctx.run.ranks.values():
        c = d.steps
        if c is None or not len(c):
            continue
        mean = np.where(c.fn_sum, c.fn_value / np.where(c.fn_n_valid > 0, c.fn_n_valid, np.nan), c.fn_value)
        with np.errstate(invalid="ignore", divide="ignore"):
            rho.append(c.losses / mean)
        n.append(c.fn_n_valid)
        step.append(np.repeat(c.step, c.micro_steps))
    if not rho:
        return [not_measured(fid, "No optimizer step recorded yet.", "尚未记录到优化步。")]
    r, k, s = np.concatenate(rho), np.concatenate(n), np.concatenate(step)
    ok = np.isfinite(r) & np.isfinite(k) & (k > 0) & (r > 0) & (s >= 0)
    if ok.sum() < 4:
        return [
            not_measured(
                fid,
                "Needs the loss-function output with its valid-token count next to each backward root.",
                "需要每个 backward 根节点旁的损失函数输出及其有效 token 数。",
            )
        ]
    if not ok.all():
        r, k, s = r[ok], k[ok], s[ok]
    T = int(s.max()) + 1
    cnt = np.bincount(s, minlength=T)  # once for all four
    cv_n = _within_step_cv(k, s, T, cnt)
    cv_rho = _within_step_cv(r, s, T, cnt)
    cv_rho_n = _within_step_cv(r / k, s, T, cnt)
    mean_n = np.bincount(s, weights=k, minlength=T) / np.maximum(cnt, 1)
    weight = mean_n[s] / k  # relative weight of a token under a per-micro-batch mean
    p5, p95 = np.percentile(weight, (5, 95))  # one partition for both
    ev: dict[str, Any] = dict(
        token_cv_within_step=cv_n,
        root_ratio_cv=cv_rho,
        root_ratio_per_token_cv=cv_rho_n,
        token_weight_p5=float(p5),
        token_weight_p95=float(p95),
        threshold=threshold_sentence(fid),
    )
    if not np.isfinite(cv_n) or cv_n <= TOKEN_CV_MIN:
        return [
            ruled_out(
                fid,
                f"Valid-token counts barely vary within a step (CV {cv_n:.3f}): any "
                "normalisation weighs tokens equally.",
                f"同一步内有效 token 数几乎不变（CV {cv_n:.3f}）：任何归一化方式下 token 权重都相同。",
                **ev,
            )
        ]
    if cv_rho < CV_RATIO * cv_rho_n:
        return [
            confirmed(
                fid,
                f"Each micro-batch's mean loss gets the same weight while its token count "
                f"varies (CV {cv_n:.2f}): a token weighs {ev['token_weight_p5']:.2f}–"
                f"{ev['token_weight_p95']:.2f}× its correct share (5th–95th percentile).",
                f"每个微批次的平均损失权重相同，而 token 数在变化（CV {cv_n:.2f}）：单个 token 的权重是其应有权重的 "
                f"{ev['token_weight_p5']:.2f}–{ev['token_weight_p95']:.2f} 倍（第 5–95 百分位）。",
                **ev,
            )
        ]
    return [
        ruled_out(
            fid,
            f"The backward root scales with the token count (CV of root/loss/tokens "
            f"{cv_rho_n:.3f} vs {cv_rho:.3f}): tokens are weighted equally.",
            f"backward 根节点随 token 数缩放（root/loss/tokens 的 CV 为 {cv_rho_n:.3f}，对比 {cv_rho:.3f}）："
            "各 token 权重相同。",
            **ev,
        )
    ]
