"""Hypothesis `loss-normalization`: loss averaged per micro-batch while token counts vary.

Let ρ_i = backward root / loss-function mean of micro-batch i, n_i its valid tokens. Within one
optimizer step (all ranks, all micro-steps):
* a loss normalised by the global token count gives ρ_i ∝ n_i (ρ/n constant);
* a per-micro-batch mean (divided by A) gives ρ_i constant, so each micro-batch weighs the same and
  a token in micro-batch i weighs n̄/n_i times its correct share.
The check compares the mean within-step coefficient of variation (CV) of ρ with that of ρ/n, and
needs the token counts to vary (CV(n) > :data:`TOKEN_CV_MIN`; below that both normalisations agree).

Pooling all ranks' micro-steps of a step, this already confirms a loss divided by the rank's own
valid-token count at one micro-step per step (ρ is the same on every rank while n differs).
`loss-norm-per-rank-tokens` names that across-rank part on its own: per step and rank,
R_r = Σ_i ρ_i is the weight of rank r's loss and N_r = Σ_i n_i its tokens; a global divisor gives
R_r ∝ N_r, the rank's own count (or a per-micro-batch mean) R_r equal across ranks; the same CV
test runs across ranks, and the within-rank CV test says whether the rank divides by its own count.

A masked token loss reduced by hand (`reduction="none"`, then sum / count) has no loss-function
value: ρ is then the backward root itself (the per-token mean loss is taken as constant within the
step) and the tokens come from the labels (`labels` passed to the model, or the target of the
unreduced loss call, != ignore_index). The per-token loss's own spread adds to CV(ρ), so that basis
decides with the stricter :data:`ROOT_RATIO` both ways and is inconclusive in between.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, inconclusive, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

TOKEN_CV_MIN = limit("loss-normalization-variable-tokens", "token_cv")
CV_RATIO = limit("loss-normalization-variable-tokens", "cv_ratio")  # CV(ρ) < this × CV(ρ/n): ρ is constant
# from the root alone (no loss-function value) the per-token loss's own spread adds to CV(ρ): stricter
ROOT_RATIO = limit("loss-normalization-variable-tokens", "root_ratio")


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
FINDS = ("loss-normalization-variable-tokens", "loss-norm-per-rank-tokens")


@dataclass
class _Micro:
    """The usable micro-steps of the run, all ranks: ρ, valid tokens, step, rank, and the basis."""

    rho: np.ndarray
    tokens: np.ndarray
    step: np.ndarray
    rank: np.ndarray
    basis: str  # "loss-fn": ρ = root / loss-function mean; "root": ρ = root (no loss-function value)


def _micro_steps(ctx: Context) -> _Micro | None:
    """ρ = root / loss-function mean where the loss-function output was seen; where it was not (a
    masked loss reduced by hand, reduction="none"), the root itself, with the micro-step's valid
    tokens from the labels (the model's `labels`, or the unreduced loss call's target)."""
    parts: dict[str, list[list[np.ndarray]]] = {"loss-fn": [[], [], [], []], "root": [[], [], [], []]}
    for rank, d in ctx.run.ranks.items():
        c = d.steps
        if c is None or not len(c):
            continue
        mean = np.where(c.fn_sum, c.fn_value / np.where(c.fn_n_valid > 0, c.fn_n_valid, np.nan), c.fn_value)
        step = np.repeat(c.step, c.micro_steps)
        with np.errstate(invalid="ignore", divide="ignore"):
            fn_rho = c.losses / mean
        n_fn = c.fn_n_valid
        n_any = np.where(np.isfinite(c.tokens), c.tokens, c.fn_n_valid)
        for basis, rho, n in (
            ("loss-fn", fn_rho, n_fn),
            ("root", np.where(np.isfinite(mean), np.nan, c.losses), n_any),
        ):
            ok = np.isfinite(rho) & np.isfinite(n) & (n > 0) & (rho > 0) & (step >= 0)
            for arr, v in zip(parts[basis], (rho[ok], n[ok], step[ok], np.full(int(ok.sum()), rank))):
                arr.append(v)
    for basis in ("loss-fn", "root"):
        rho_l, n_l, s_l, r_l = parts[basis]
        if rho_l and sum(len(x) for x in rho_l) >= 4:
            return _Micro(
                np.concatenate(rho_l),
                np.concatenate(n_l),
                np.concatenate(s_l).astype(np.int64),
                np.concatenate(r_l).astype(np.int64),
                basis,
            )
    return None


def _cvs(x: np.ndarray, k: np.ndarray, group: np.ndarray) -> tuple[float, float, float]:
    """Mean within-group CV of the tokens, of ρ and of ρ/n (groups: small non-negative ints)."""
    T = int(group.max()) + 1
    cnt = np.bincount(group, minlength=T)
    return (
        _within_step_cv(k, group, T, cnt),
        _within_step_cv(x, group, T, cnt),
        _within_step_cv(x / k, group, T, cnt),
    )


def check(ctx: Context) -> list[Finding]:
    m = _micro_steps(ctx)
    return [_variable_tokens(ctx, m), _per_rank(ctx, m)]


def _basis_text(m: _Micro) -> Text:
    if m.basis == "loss-fn":
        return Text("", "")
    return Text(
        " (from the backward root alone: no loss-function output was seen, so the per-token loss is "
        "taken as constant within a step; stricter margin)",
        "（仅依据 backward 根节点：未见到损失函数输出，因此假定一步内逐 token 损失不变；采用更严格的判定）",
    )


def _variable_tokens(ctx: Context, m: _Micro | None) -> Finding:
    fid = "loss-normalization-variable-tokens"
    if m is None:
        if not any(d.steps is not None and len(d.steps) for d in ctx.run.ranks.values()):
            return not_measured(fid, Text("No optimizer step recorded yet.", "尚未记录到优化步。"))
        return not_measured(
            fid,
            Text(
                "Needs the backward root and each micro-batch's valid-token count (the loss function's "
                "target, or `labels` passed to the model).",
                "需要 backward 根节点及每个微批次的有效 token 数（损失函数的 target，或传给模型的 `labels`）。",
            ),
        )
    r, k, s = m.rho, m.tokens, m.step
    cv_n, cv_rho, cv_rho_n = _cvs(r, k, s)
    T = int(s.max()) + 1
    cnt = np.bincount(s, minlength=T)
    mean_n = np.bincount(s, weights=k, minlength=T) / np.maximum(cnt, 1)
    weight = mean_n[s] / k  # relative weight of a token under a per-micro-batch mean
    p5, p95 = np.percentile(weight, (5, 95))  # one partition for both
    ratio = CV_RATIO if m.basis == "loss-fn" else ROOT_RATIO
    ev: dict[str, Any] = dict(
        token_cv_within_step=cv_n,
        root_ratio_cv=cv_rho,
        root_ratio_per_token_cv=cv_rho_n,
        token_weight_p5=float(p5),
        token_weight_p95=float(p95),
        basis=m.basis,
        threshold=threshold_sentence(fid),
    )
    how = _basis_text(m)
    if not np.isfinite(cv_n) or cv_n <= TOKEN_CV_MIN:
        return ruled_out(
            fid,
            Text(
                f"Valid-token counts barely vary within a step (CV {cv_n:.3f}): any "
                "normalisation weighs tokens equally.",
                f"同一步内有效 token 数几乎不变（CV {cv_n:.3f}）：任何归一化方式下 token 权重都相同。",
            ),
            **ev,
        )
    if cv_rho < ratio * cv_rho_n:
        return confirmed(
            fid,
            Text(
                f"Each micro-batch's mean loss gets the same weight while its token count "
                f"varies (CV {cv_n:.2f}): a token weighs {ev['token_weight_p5']:.2f}–"
                f"{ev['token_weight_p95']:.2f}× its correct share (5th–95th percentile){how.en}.",
                f"每个微批次的平均损失权重相同，而 token 数在变化（CV {cv_n:.2f}）：单个 token 的权重是其应有权重的 "
                f"{ev['token_weight_p5']:.2f}–{ev['token_weight_p95']:.2f} 倍（第 5–95 百分位）{how.zh}。",
            ),
            **ev,
        )
    if m.basis == "root" and not cv_rho_n < ROOT_RATIO * cv_rho:
        return inconclusive(
            fid,
            Text(
                f"From the backward root alone neither normalisation fits (CV of root {cv_rho:.3f}, of "
                f"root/tokens {cv_rho_n:.3f}, tokens {cv_n:.3f}): the per-token loss varies too much to tell.",
                f"仅凭 backward 根节点无法判断（根的 CV {cv_rho:.3f}，根/token 的 CV {cv_rho_n:.3f}，token {cv_n:.3f}）："
                "逐 token 损失变化太大。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"The backward root scales with the token count (CV of root/loss/tokens "
            f"{cv_rho_n:.3f} vs {cv_rho:.3f}): tokens are weighted equally{how.en}.",
            f"backward 根节点随 token 数缩放（root/loss/tokens 的 CV 为 {cv_rho_n:.3f}，对比 {cv_rho:.3f}）："
            f"各 token 权重相同{how.zh}。",
        ),
        **ev,
    )


def _per_rank(ctx: Context, m: _Micro | None) -> Finding:
    """Across ranks, per step: R_r = Σ_i ρ_i (the weight of rank r's loss) against N_r = Σ_i n_i.
    Global normalisation gives R_r ∝ N_r; dividing by the rank's own count gives R_r equal."""
    fid = "loss-norm-per-rank-tokens"
    if m is None or len(np.unique(m.rank)) < 2:
        return not_measured(
            fid,
            Text(
                "Needs ≥ 2 ranks with the backward root and valid-token counts of their micro-steps.",
                "需要至少 2 个 rank 记录了各微步的 backward 根节点与有效 token 数。",
            ),
        )
    ranks = np.unique(m.rank)
    key = m.step * len(ranks) + np.searchsorted(ranks, m.rank)
    uniq, inv = np.unique(key, return_inverse=True)
    R = np.bincount(inv, weights=m.rho)
    N = np.bincount(inv, weights=m.tokens)
    step_of = (uniq // len(ranks)).astype(np.int64)
    cv_n, cv_r, cv_rn = _cvs(R, N, step_of)
    ratio = CV_RATIO if m.basis == "loss-fn" else ROOT_RATIO
    # within each rank (≥ 2 micro-steps): is its loss normalised by its own token count?
    cv_in_n, cv_in_rho, cv_in_rho_n = _cvs(m.rho, m.tokens, inv.astype(np.int64))
    own_count = bool(np.isfinite(cv_in_n) and cv_in_n > TOKEN_CV_MIN and cv_in_rho_n < CV_RATIO * cv_in_rho)
    mean_n = np.bincount(step_of, weights=N) / np.maximum(np.bincount(step_of), 1)
    weight = mean_n[step_of] / N
    p5, p95 = np.percentile(weight, (5, 95))
    ev: dict[str, Any] = dict(
        rank_token_cv=cv_n,
        rank_weight_cv=cv_r,
        rank_weight_per_token_cv=cv_rn,
        token_weight_p5=float(p5),
        token_weight_p95=float(p95),
        divides_by_own_count_within_rank=own_count,
        basis=m.basis,
        ranks=int(len(ranks)),
        threshold=threshold_sentence(fid),
        source="step records: backward roots, loss-function outputs and valid-token counts per rank",
    )
    how = _basis_text(m)
    if not np.isfinite(cv_n) or cv_n <= TOKEN_CV_MIN:
        return ruled_out(
            fid,
            Text(
                f"The ranks' valid-token counts per step barely differ (CV {cv_n:.3f}): any divisor weighs them alike.",
                f"各 rank 每步的有效 token 数几乎相同（CV {cv_n:.3f}）：任何除数下权重都一样。",
            ),
            **ev,
        )
    if cv_r < ratio * cv_rn:
        within_en = (
            "each rank divides its loss by its own valid-token count"
            if own_count
            else "each rank's loss gets the same weight"
        )
        within_zh = "每个 rank 用自己的有效 token 数归一化损失" if own_count else "每个 rank 的损失权重相同"
        return confirmed(
            fid,
            Text(
                f"{within_en.capitalize()} while the ranks' counts differ (CV {cv_n:.2f} per step): a token "
                f"weighs {p5:.2f}–{p95:.2f}× its share of the global mean (5th–95th percentile){how.en}.",
                f"{within_zh}，而各 rank 的 token 数不同（每步 CV {cv_n:.2f}）：单个 token 的权重是其在全局平均中应有份额的 "
                f"{p5:.2f}–{p95:.2f} 倍（第 5–95 百分位）{how.zh}。",
            ),
            **ev,
        )
    if m.basis == "root" and not cv_rn < ROOT_RATIO * cv_r:
        return inconclusive(
            fid,
            Text(
                f"From the backward root alone neither normalisation fits across ranks (CV {cv_r:.3f} vs "
                f"{cv_rn:.3f} per token).",
                f"仅凭 backward 根节点无法判断各 rank 间的归一化（CV {cv_r:.3f}，每 token {cv_rn:.3f}）。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"Each rank's loss weight scales with its token count (CV per token {cv_rn:.3f} vs {cv_r:.3f}): "
            f"the divisor is global{how.en}.",
            f"每个 rank 的损失权重随其 token 数缩放（每 token CV {cv_rn:.3f}，对比 {cv_r:.3f}）：除数是全局的{how.zh}。",
        ),
        **ev,
    )
