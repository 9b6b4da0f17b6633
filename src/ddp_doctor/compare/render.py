"""`ddp-doctor compare` output: text, JSON (`ddp-doctor.compare/1`, docs/compare.md) and one
self-contained HTML page with the overlaid curves. Every string from a run (paths, labels) is
escaped: control characters in text, ``html.escape`` in HTML.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

import numpy as np

from ddp_doctor.compare.analysis import PERSIST, Z_BAND, Comparison, settings_diff
from ddp_doctor.core.catalog import Lang, Text
from ddp_doctor.core.terminal import safe, safe_json
from ddp_doctor.report.svg import PALETTE, Chart, Line, render

# Every label the comparison prints.
LABELS: dict[str, Text] = {
    "title": Text("ddp-doctor compare", "ddp-doctor 运行对比"),
    "conclusion": Text("Conclusion", "结论"),
    "settings": Text("Settings (measured)", "设置（实测）"),
    "setting": Text("setting", "设置"),
    "curves": Text("Loss curves", "损失曲线"),
    "noise": Text("Step-to-step noise", "逐步噪声"),
    "order": Text("Data order", "数据顺序"),
    "differ": Text("Findings that differ", "不同的发现"),
    "causes": Text("Most likely causes (ranked)", "最可能的原因（按可能性排序）"),
    "notes": Text("Notes", "说明"),
    "none": Text("none", "无"),
    "unknown": Text("unknown", "未知"),
}


def t(key: str, lang: Lang) -> str:
    return LABELS[key].get(lang)


def clean(text: Any) -> str:
    """Text from a run, safe for a terminal: control characters (ESC …) shown as \\xNN."""
    return safe(text)


def _v(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_v(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_v(v) for v in value) + "]"
    return clean(value)


def _curve_line(c: Comparison, lang: Lang) -> str:
    al = c.aligned
    axis = al.axis
    per = f"; {al.fine_steps_per_point:g} steps of the finer run per point" if al.fine_steps_per_point else ""
    if lang == "zh":
        per = f"；每个点对应较细运行的 {al.fine_steps_per_point:g} 步" if al.fine_steps_per_point else ""
        head = f"按已消耗的{({'samples': '样本', 'tokens': 'token', 'steps': '优化步'})[axis]}对齐（以运行 {al.coarse.upper()} 的步为网格{per}）"
        if c.max_abs_diff is None:
            return head + "：没有共同的点"
        where = (
            f"在 {c.leaves_band_at:.6g} 处首次连续 {PERSIST} 点超出 {Z_BAND:g}σ 合并噪声带"
            if c.leaves_band_at is not None
            else f"始终在 {Z_BAND:g}σ 合并噪声带内"
        )
        return f"{head}：最大 |L_B − L_A| = {c.max_abs_diff:.4g}；{where}"
    head = f"aligned by {axis} consumed (run {al.coarse.upper()}'s steps as the grid{per})"
    if c.max_abs_diff is None:
        return head + ": no common point"
    where = (
        f"leaves the combined {Z_BAND:g}σ minibatch band at {c.leaves_band_at:.6g} {axis} "
        f"({PERSIST} consecutive points)"
        if c.leaves_band_at is not None
        else f"stays within the combined {Z_BAND:g}σ minibatch band"
    )
    return f"{head}: max |L_B − L_A| = {c.max_abs_diff:.4g}; {where}"


def _noise_lines(c: Comparison, lang: Lang) -> list[str]:
    out = []
    for key, r in (("A", c.a), ("B", c.b)):
        out.append(
            f"{key}: σ_obs {_v(r.noise_obs)} (σ_pred {_v(r.noise_pred)}, n={r.noise_n})"
            if lang != "zh"
            else f"{key}：观测 σ {_v(r.noise_obs)}（预测 σ {_v(r.noise_pred)}，n={r.noise_n}）"
        )
    if c.noise_ratio_observed is not None:
        verdict = {True: Text("explained by the batch size", "可由批量大小解释"),
                   False: Text("NOT explained by the batch size", "无法由批量大小解释"),
                   None: Text("not judged", "未判断")}[c.noise_explained]  # fmt: skip
        se = f" ± {c.noise_ratio_se:.2g} (se of log)" if c.noise_ratio_se is not None else ""
        if lang == "zh":
            out.append(
                f"B/A 观测 {c.noise_ratio_observed:.3g}×，预测 {_v(c.noise_ratio_predicted)}×"
                f"（仅按批量 {_v(c.noise_ratio_batch_only)}×）→ {verdict.zh}"
            )
        else:
            out.append(
                f"B/A observed {c.noise_ratio_observed:.3g}×{se}, predicted {_v(c.noise_ratio_predicted)}× "
                f"(batch size alone {_v(c.noise_ratio_batch_only)}×) → {verdict.en}"
            )
    return out


def _order_line(c: Comparison, lang: Lang) -> str:
    if c.same_data_order is None:
        return (
            "不可比较（需要两次运行中每个 rank 的 DistributedSampler 记录）"
            if lang == "zh"
            else "not compared (needs DistributedSampler records from every rank of both runs)"
        )
    if lang == "zh":
        return (
            f"{'相同' if c.same_data_order else '不同'}（比较了第一个 epoch 的前 {c.order_compared} 个索引）"
        )
    return f"{'same' if c.same_data_order else 'different'} (first {c.order_compared} indices of the first epoch)"


def render_text(c: Comparison, lang: Lang = "en") -> str:
    lines = [t("title", lang), f"A: {clean(c.a.path)}", f"B: {clean(c.b.path)}", ""]
    lines.append(f"{t('conclusion', lang)}: {clean(c.headline().get(lang))}")
    lines += ["", t("settings", lang)]
    rows = settings_diff(c.a, c.b)
    width = max(len(r["setting"]) for r in rows) + 2
    for r in rows:
        mark = " " if r["same"] else "≠"
        lines.append(f" {mark} {r['setting']:<{width}} A {_v(r['a'])}  |  B {_v(r['b'])}")
    lines += ["", t("curves", lang), "  " + _curve_line(c, lang)]
    lines += ["", t("noise", lang)] + ["  " + x for x in _noise_lines(c, lang)]
    lines += ["", t("order", lang), "  " + _order_line(c, lang)]
    lines += ["", t("differ", lang)]
    if c.differing_findings:
        for d in c.differing_findings:
            lines.append(f"  {d['id']} ({d['severity']}): A {d['a'] or '—'}, B {d['b'] or '—'}")
    else:
        lines.append("  " + t("none", lang))
    lines += ["", t("causes", lang)]
    if c.causes:
        for n, cause in enumerate(c.causes, 1):
            lines.append(f"  {n}. {clean(cause.summary.get(lang))}")
    else:
        lines.append("  " + t("none", lang))
    if c.equivalence is not None:  # both runs carry fingerprints (docs/equivalence.md)
        from ddp_doctor.equiv.render import summary_lines

        lines += [""] + summary_lines(c.equivalence, lang)
    if c.notes:
        lines += ["", t("notes", lang)] + [f"  - {clean(n)}" for n in c.notes]
    return "\n".join(lines) + "\n"


def render_json(c: Comparison) -> str:
    return safe_json(json.dumps(c.to_json(), indent=1, ensure_ascii=False, allow_nan=False))


def _chart(c: Comparison, lang: Lang) -> str:
    al = c.aligned
    x = al.samples
    axis_label = {"samples": Text("samples consumed", "已消耗样本"), "tokens": Text("tokens consumed", "已消耗 token"),
                  "steps": Text("optimizer steps", "优化步")}[al.axis].get(lang)  # fmt: skip
    chart = Chart(t("curves", lang), x_label=axis_label)
    chart.lines.append(Line(f"A {c.a.label}", al.loss_a, PALETTE[0], x=x, width=1.6))
    chart.lines.append(Line(f"B {c.b.label}", al.loss_b, PALETTE[1], x=x, width=1.6))
    band = al.band
    if np.isfinite(band).any():
        lower, upper = al.band_around_a
        chart.lines.append(Line(f"A ± {Z_BAND:g}σ", upper, "#999", x=x, dash="4,3", width=0.8))
        chart.lines.append(Line("", lower, "#999", x=x, dash="4,3", width=0.8))
    diff = Chart("L_B − L_A", x_label=axis_label)
    diff.lines.append(Line("L_B − L_A", al.diff, PALETTE[2], x=x))
    if np.isfinite(band).any():
        diff.lines.append(Line(f"± {Z_BAND:g}σ", band, "#999", x=x, dash="4,3", width=0.8))
        diff.lines.append(Line("", -band, "#999", x=x, dash="4,3", width=0.8))
    return render(chart) + render(diff)


def render_html(c: Comparison, lang: Lang = "en") -> str:
    from ddp_doctor.report.html import CSS

    i = 1 if lang == "zh" else 0
    e = escape
    parts = [
        f'<!DOCTYPE html><html lang="{"zh-CN" if i else "en"}"><head><meta charset="utf-8">'
        f"<title>{e(t('title', lang))}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(t('title', lang))}</h1>",
        f"<p class='muted'>A: {e(c.a.path)}<br>B: {e(c.b.path)}</p>",
        f"<p><b>{e(t('conclusion', lang))}:</b> {e(c.headline().get(lang))}</p>",
        f"<h2>{e(t('curves', lang))}</h2><p>{e(_curve_line(c, lang))}</p>",
        _chart(c, lang),
        f"<h2>{e(t('noise', lang))}</h2><p>" + "<br>".join(e(x) for x in _noise_lines(c, lang)) + "</p>",
        f"<h2>{e(t('settings', lang))}</h2><table><tr><th>{e(t('setting', lang))}</th><th>A</th><th>B</th></tr>",
    ]
    for r in settings_diff(c.a, c.b):
        style = "" if r["same"] else " style='background:#fff3f3'"
        parts.append(
            f"<tr{style}><td>{e(r['setting'])}</td><td>{e(_v(r['a']))}</td><td>{e(_v(r['b']))}</td></tr>"
        )
    parts.append("</table>")
    parts.append(f"<h2>{e(t('order', lang))}</h2><p>{e(_order_line(c, lang))}</p>")
    parts.append(f"<h2>{e(t('differ', lang))}</h2><ul>")
    for d in c.differing_findings:
        parts.append(f"<li>{e(d['id'])} ({e(d['severity'])}): A {e(str(d['a']))}, B {e(str(d['b']))}</li>")
    if not c.differing_findings:
        parts.append(f"<li>{e(t('none', lang))}</li>")
    parts.append(f"</ul><h2>{e(t('causes', lang))}</h2><ol>")
    for cause in c.causes:
        parts.append(f"<li>{e(cause.summary.get(lang))}</li>")
    parts.append("</ol>")
    if c.notes:
        parts.append(
            f"<h2>{e(t('notes', lang))}</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in c.notes) + "</ul>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)
