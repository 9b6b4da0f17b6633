"""The report as one self-contained HTML file: no CDN, no network, inline CSS, SVG and a few lines
of JS. Every string that comes from the run (paths, parameter names, summaries, evidence) goes
through ``html.escape``; evidence is embedded as escaped JSON text, never as markup or script.
"""

from __future__ import annotations

import json
from html import escape

from rich.text import Text

from ddp_doctor.analysis import figures
from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.core.catalog import HYPOTHESES, Lang
from ddp_doctor.core.findings import SEVERITY_ORDER, jsonable
from ddp_doctor.report.i18n import w
from ddp_doctor.report.svg import PALETTE, Chart, Line, render
from ddp_doctor.report.text import run_lines

MAX_RANK_LINES = 8  # per-rank loss lines drawn; more ranks would hide the global curve

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","Microsoft YaHei",sans-serif;
margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;font-size:13px}
td,th{border:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f4f4f4}.v-confirmed{color:#b00;font-weight:bold}.v-ruled-out{color:#080}
.v-inconclusive{color:#a60}.v-not-measured{color:#888}.s-error{color:#b00;font-weight:bold}
.s-warning{color:#a60;font-weight:bold}.s-info{color:#07a}.muted{color:#666;font-size:12px}
pre{background:#f7f7f7;padding:6px;font-size:11px;white-space:pre-wrap;word-break:break-all;margin:4px 0}
.failure{background:#fdecea;border:1px solid #e0a8a8;padding:6px 10px;color:#8a1c1c}
.problems{background:#fff8e1;border:1px solid #f0d58c;padding:6px 10px}
.hidden{display:none}
"""

JS = """
(function(){
  var box = document.getElementById('show-all');
  var rows = document.querySelectorAll('tr.other');
  function apply(){ for (var i = 0; i < rows.length; i++) { rows[i].classList.toggle('hidden', !box.checked); } }
  box.addEventListener('change', apply);
  apply();
})();
"""


def _plain(line: str) -> str:
    """Run-facts lines are rich markup for the terminal; keep the text (tags and escapes undone)."""
    return Text.from_markup(line).plain


def _charts(diag: Diagnosis, lang: Lang) -> list[str]:
    """The charts, from the curves of analysis/figures.py (the exporters write the same ones)."""
    ctx = diag.context
    # on the rollup path the columns are the steps read raw: plot them at their step numbers
    sx = figures.step_axis(ctx)
    charts: list[str] = []
    xl = w("step", lang)
    loss = Chart(w("plot_loss", lang), x_label=xl)
    for i, (r, curve) in enumerate(figures.local_loss(ctx)[:MAX_RANK_LINES]):
        loss.lines.append(
            Line(
                f"{w('rank', lang)} {r} {w('local', lang)}",
                curve.values,
                PALETTE[(i + 1) % len(PALETTE)],
                x=sx,
                width=0.8,
                opacity=0.45,
            )
        )
    loss.lines.append(Line(w("global", lang), figures.loss(ctx).values, PALETTE[0], x=sx, width=1.6))
    band = figures.noise_band(ctx)
    if band is not None:
        _, lower, upper = band
        loss.band = (lower.values, upper.values)
        loss.band_x = sx
        loss.band_label = w("band", lang)
    loss.markers = [
        (sp.step, sp.peak, f"{w('spike', lang)} @ {sp.step}: {sp.peak:.4g}") for sp in ctx.loss_spikes[:200]
    ]
    charts.append(render(loss))
    charts.append(
        render(Chart(w("plot_lr", lang), [Line("lr", figures.lr(ctx).values, PALETTE[2], x=sx)], x_label=xl))
    )
    scale = figures.loss_scale(ctx)
    if figures.shown(scale):
        charts.append(
            render(
                Chart(
                    w("plot_scale", lang),
                    [Line("scale", scale.values, PALETTE[3], x=sx)],
                    log_y=True,
                    x_label=xl,
                )
            )
        )
    grad = Chart(
        w("plot_grad", lang),
        [
            Line(w("local_rms", lang), figures.grad_norm_local_rms(ctx).values, PALETTE[1], x=sx),
            Line(w("global", lang), figures.grad_norm(ctx).values, PALETTE[0], x=sx),
        ],
        log_y=True,
        x_label=xl,
    )
    grad.markers = [(sp.step, sp.peak, f"{w('spike', lang)} @ {sp.step}") for sp in ctx.grad_spikes[:200]]
    charts.append(render(grad))
    gns = Chart(
        w("plot_gns", lang),
        [Line("B_simple", figures.b_simple(ctx).values, PALETTE[4], x=sx)],
        log_y=True,
        x_label=xl,
    )
    batch = figures.effective_batch(ctx)
    if batch is not None:
        gns.lines.append(Line(w("effective_batch_line", lang), batch.values, PALETTE[7], x=sx, dash="4 3"))
    charts.append(render(gns))
    ratios = figures.update_ratios(ctx)
    if ratios:
        lines = [
            Line(c.key.split("/", 1)[1], c.values, PALETTE[i % len(PALETTE)], x=c.x)
            for i, c in enumerate(ratios)
        ]
        charts.append(render(Chart(w("plot_ratio", lang), lines, log_y=True, x_label=xl)))
    overlap = figures.data_overlap(ctx)
    if overlap is not None:
        charts.append(
            render(
                Chart(w("plot_overlap", lang), [Line("share", overlap.values, PALETTE[5], x=sx)], x_label=xl)
            )
        )
    return charts


def render_html(diag: Diagnosis, lang: Lang = "en") -> str:
    info = diag.run_info
    parts = [
        f'<!DOCTYPE html><html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(w('title', lang))}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(w('title', lang))}</h1><p class='muted'>{escape(str(info['path']))}</p>",
    ]
    failure = info.get("failure")
    if failure:  # a failed rank is the first thing said (analysis/failure.py)
        parts.append(f"<p class='failure'><b>{escape(failure['summary'].get(lang))}</b></p>")
    answer = info.get("oscillation")
    if answer:  # the question the user came with, answered first
        parts.append(f"<p class='answer'><b>{escape(answer['summary'].get(lang))}</b></p>")
    parts.append("<p>" + "<br>".join(escape(_plain(x)) for x in run_lines(diag, lang)) + "</p>")
    if info["problems"]:
        parts.append(
            f"<div class='problems'><b>{escape(w('problems', lang))}</b><ul>"
            + "".join(f"<li>{escape(p)}</li>" for p in info["problems"])
            + "</ul></div>"
        )
    parts.append(
        f"<h2>{escape(w('hypothesis', lang))}</h2><table><tr><th>{escape(w('hypothesis', lang))}</th>"
        f"<th>{escape(w('verdict', lang))}</th><th>{escape(w('summary', lang))}</th></tr>"
    )
    for h in diag.hypotheses:
        summary = h.summary.get(lang)
        parts.append(
            f"<tr><td><b>{escape(h.id)}</b><br><span class='muted'>"
            f"{escape(HYPOTHESES[h.id].guess.get(lang))}</span></td>"
            f"<td class='v-{escape(h.verdict)}'>{escape(w(h.verdict, lang))}</td>"
            f"<td>{escape(summary)}</td></tr>"
        )
    parts.append("</table>")
    parts.append(
        f"<h2>{escape(w('findings', lang))}</h2><label><input type='checkbox' id='show-all'> "
        f"{escape(w('show_all', lang))}</label><table><tr><th>{escape(w('finding', lang))}</th>"
        f"<th>{escape(w('status', lang))}</th><th>{escape(w('summary', lang))}</th></tr>"
    )
    ordered = sorted(diag.findings, key=lambda f: (f.status != "confirmed", SEVERITY_ORDER[f.severity]))
    for f in ordered:
        cls = "" if f.status == "confirmed" else " class='other'"
        sev = (
            f"<span class='s-{escape(f.severity)}'>{escape(w(f.severity, lang))}</span>"
            if f.status == "confirmed"
            else ""
        )
        evidence = escape(json.dumps(jsonable(f.evidence), ensure_ascii=False, indent=1))
        parts.append(
            f"<tr{cls}><td><b>{escape(f.id)}</b><br>{sev}</td><td class='v-{escape(f.status)}'>"
            f"{escape(w(f.status, lang))}</td><td>{escape(f.summary_in(lang))}"
            f"<br><span class='muted'>{escape(w('fix', lang))}: {escape(f.fix_in(lang))}</span>"
            f"<details><summary class='muted'>{escape(w('evidence', lang))}</summary>"
            f"<pre>{evidence}</pre></details></td></tr>"
        )
    parts.append("</table>")
    parts.append(f"<h2>{escape(w('plots', lang))}</h2>")
    parts.extend(f"<div>{svg}</div>" for svg in _charts(diag, lang))
    parts.append(f"<script>{JS}</script></body></html>")
    return "".join(parts)
