"""The first line of the report: "is the oscillation I see a bug or noise?"

Observed vs predicted step-to-step std of the global loss with its 95 % interval
(:mod:`ddp_doctor.analysis.quantities.oscillation`), the same for the loss the script itself
logged when the probe captured it (`logged_loss` records, compared with the global loss's
predicted band), and — when the global loss is above the band — the confirmed findings that
explain it, ranked: causes before symptoms (a spec's ``symptom``), then by severity, then by the
spec's ``cause_rank`` (the findings that change the update most directly first), then catalog order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import fmt
from ddp_doctor.analysis.quantities.noise_band import WITHIN_NOISE_RATIO
from ddp_doctor.analysis.quantities.oscillation import obs_dof, robust_second_diff_std, var_interval
from ddp_doctor.core.catalog import FINDINGS, Text
from ddp_doctor.core.findings import SEVERITY_ORDER, Finding

EVAL_WORDS = ("val", "eval", "test", "valid", "dev")


def explaining(findings: list[Finding]) -> list[str]:
    """Confirmed warning/error findings, ranked (see module docstring)."""
    catalog = {fid: i for i, fid in enumerate(FINDINGS)}
    chosen = [f for f in findings if f.status == "confirmed" and f.severity in ("error", "warning")]

    def rank(f: Finding) -> tuple[bool, int, float, int]:
        spec = FINDINGS[f.id]
        cause = spec.cause_rank if spec.cause_rank is not None else math.inf
        return (spec.symptom, SEVERITY_ORDER[f.severity], cause, catalog[f.id])

    chosen.sort(key=rank)
    return [f.id for f in chosen]


def _logged(ctx: Context) -> dict[str, Any] | None:
    """The main logged training-loss series (most values; evaluation keys excluded), if captured."""
    series: dict[tuple[str, str, int], list[float]] = {}
    for r in sorted(ctx.run.ranks):
        data = ctx.run.ranks[r]
        for rec in getattr(data, "logged_loss", None) or data.records.get("logged_loss") or ():
            key = str(rec.get("key", ""))
            if any(w in key.lower() for w in EVAL_WORDS):
                continue
            try:
                value = float(rec["value"])
            except (KeyError, TypeError, ValueError):
                continue
            series.setdefault((str(rec.get("source", "")), key, int(rec.get("rank", r))), []).append(value)
    if not series:
        return None
    (source, key, rank), values = max(series.items(), key=lambda kv: len(kv[1]))
    obs, n = robust_second_diff_std(np.asarray(values))
    out: dict[str, Any] = {"source": source, "key": key, "rank": rank, "values": len(values)}
    pred = ctx.oscillation.predicted_std
    if obs is None or not pred:
        out["observed_std"] = obs
        return out
    lo, hi = var_interval(obs * obs, obs_dof(n))
    out.update(
        observed_std=obs,
        over_global_band=obs / pred,
        over_global_band_low=(lo**0.5) / pred,
        over_global_band_high=(hi**0.5) / pred,
    )
    return out


def oscillation_answer(ctx: Context, findings: list[Finding]) -> dict[str, Any]:
    o = ctx.oscillation
    unstable = next(
        (f for f in findings if f.id == "loss-unstable" and f.status == "confirmed"), None
    )  # a sustained excursion is not noise even when the robust std of the rest is in the band
    not_noise = o.decision == "above-band" or unstable is not None
    causes = explaining(findings) if not_noise else []
    logged = _logged(ctx)
    out: dict[str, Any] = {"question": "Is the oscillation I see a bug or noise?", **o.to_json()}
    out["answer"] = (
        "not-noise"
        if not_noise
        else {"within-band": "noise", "undecided": "undecided"}.get(o.decision, "not-measured")
    )
    out["explained_by"] = causes
    out["logged"] = logged
    stats = Text("", "")
    if o.ratio is not None:
        stats = Text(
            f"the global loss's step-to-step std {fmt(o.observed_std)} is {o.ratio:.2f}× the "
            f"{fmt(o.predicted_std)} minibatch noise predicted for this batch (95% interval "
            f"{o.ratio_low:.2f}–{o.ratio_high:.2f}, {o.steps_used + 2} steps; band limit {WITHIN_NOISE_RATIO})",
            f"全局损失的逐步标准差 {fmt(o.observed_std)} 是当前批量下预测小批量噪声 {fmt(o.predicted_std)} 的 "
            f"{o.ratio:.2f} 倍（95% 区间 {o.ratio_low:.2f}–{o.ratio_high:.2f}，{o.steps_used + 2} 步；"
            f"噪声带上限 {WITHIN_NOISE_RATIO}）",
        )
    if not_noise:
        if o.decision == "above-band":
            text = Text("Bug or noise? Not noise: ", "是 bug 还是噪声？不是噪声：") + stats + Text(".", "。")
        else:
            assert unstable is not None
            text = Text(
                f"Bug or noise? Not noise: {unstable.summary.en.removeprefix('Training is unstable: ')}",
                f"是 bug 还是噪声？不是噪声：{unstable.summary.get('zh').removeprefix('训练不稳定：')}",
            )
        if causes:
            text += Text(
                " Confirmed findings that explain it, most likely first: " + ", ".join(causes) + ".",
                "可以解释它的已确认发现（按可能性排序）：" + "、".join(causes) + "。",
            )
        else:
            text += Text(
                " No confirmed finding explains it: see the inconclusive and not-measured ones.",
                "没有已确认的发现能解释它：请查看无定论和未测量的发现。",
            )
    elif o.decision == "within-band":
        text = (
            Text("Bug or noise? Noise: ", "是 bug 还是噪声？是噪声：")
            + stats
            + Text(": within the minibatch-noise band.", "：在小批量噪声带之内。")
        )
    elif o.decision == "undecided":
        more = Text(
            f"a run of about {o.steps_needed} steps at this ratio would decide it",
            f"按当前比值，约 {o.steps_needed} 步的运行即可判定",
        )
        if not o.steps_needed:
            more = Text(
                "the ratio is too close to the limit to decide with any practical run length",
                "比值太接近上限，实际运行长度内无法判定",
            )
        text = (
            Text("Bug or noise? Not decided yet: ", "是 bug 还是噪声？尚无定论：")
            + stats
            + Text("; the interval straddles the limit, ", "；区间跨越上限，")
            + more
            + Text(".", "。")
        )
    else:
        text = Text(f"Bug or noise? Not measured: {o.reason}.", f"是 bug 还是噪声？未测量：{o.reason}。")
    if logged and logged.get("over_global_band") is not None:
        who = f"{logged['source']} '{logged['key']}'" + (
            f", rank {logged['rank']}" if logged["rank"] >= 0 else ""
        )
        text += Text(
            f" The loss the script logs ({who}) moves {logged['over_global_band']:.2f}× the global band "
            f"(95% interval {logged['over_global_band_low']:.2f}–{logged['over_global_band_high']:.2f}).",
            f"脚本记录的损失（{who}）的波动是全局噪声带的 {logged['over_global_band']:.2f} 倍"
            f"（95% 区间 {logged['over_global_band_low']:.2f}–{logged['over_global_band_high']:.2f}）。",
        )
    stalled = next(
        (f for f in findings if f.id == "training-not-progressing" and f.status == "confirmed"), None
    )
    if stalled is not None:  # whatever the oscillation is, a run that does not train is the answer
        out["not_progressing"] = True
        text = (
            Text(
                "The model is not learning (training-not-progressing): "
                + stalled.summary.en.removeprefix("Training does not progress: ")
                + " ",
                "模型没有在学习（training-not-progressing）："
                + stalled.summary.get("zh").removeprefix("训练没有进展："),
            )
            + text
        )
    out["summary"] = text  # the JSON writes "summary" and "summary_zh" (Diagnosis.run_json)
    return out
