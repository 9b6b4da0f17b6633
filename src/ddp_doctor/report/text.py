"""The report as a terminal page (rich): run facts, the hypothesis table, then findings by severity."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.table import Table

from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.core.catalog import HYPOTHESES, Lang, Text
from ddp_doctor.core.findings import SEVERITY_ORDER
from ddp_doctor.core.terminal import safe
from ddp_doctor.report.i18n import w
from ddp_doctor.rundir.reader import _ranges

VERDICT_STYLE = {
    "confirmed": "bold red",
    "ruled-out": "green",
    "inconclusive": "yellow",
    "not-measured": "dim",
}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
SUMMARY_CHARS = 220  # hypothesis summaries are cut here in the table; the JSON has them whole


def _in_part(got: Any, lang: Lang) -> str:
    """The rollup path's windows read in part (JSON run.rollups.windows_read_in_part), as words."""
    if not isinstance(got, dict) or not (got.get("head") or got.get("tail") or got.get("span")):
        return ""
    return "; " + w("in_part", lang).format(**{m: int(got.get(m) or 0) for m in ("head", "tail", "span")})


def escape(text: object) -> str:
    """Rich markup escaped, and control characters from the run made visible (terminal.safe)."""
    return escape_markup(safe(text))


def _num(x: object) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def run_lines(diag: Diagnosis, lang: Lang) -> list[str]:
    r = diag.run_info
    eb = r["effective_batch"]
    lines = [
        f"{w('world_size', lang)}: {r['world_size']}   {w('optimizer_steps', lang)}: {r['optimizer_steps']}"
        f"   {w('micro_steps', lang)}: {_num(r['micro_steps_per_optimizer_step'])}",
        f"{w('effective_batch', lang)}: {_num(eb['samples'])} {w('samples', lang)}"
        + (f", {_num(eb['tokens'])} {w('tokens', lang)}" if eb["tokens"] is not None else "")
        if eb["samples"] is not None
        else f"{w('effective_batch', lang)}: {w('not-measured', lang)} ({escape(eb.get('reason') or '?')})",
    ]
    if len(r.get("nodes") or ()) > 1:  # multi-node: which ranks ran where
        where = "; ".join(_node_line(n) for n in r["nodes"])
        lines.append(f"{w('nodes', lang)}: {len(r['nodes'])} — {escape(where)}")
    g = r["gradient_noise_scale"]
    if g["b_simple"] is not None:
        pm = f" ± {g['stderr']:.3g}" if g["stderr"] else ""
        lines.append(
            f"{w('gns', lang)}: {'≥ ' if g['lower_bound'] else ''}{g['b_simple']:.4g}{pm} "
            f"{w('samples', lang)} ({g['steps_used']} {w('steps', lang)})"
        )
        if g.get("b_simple_tokens") is not None:
            pm_t = f" ± {g['stderr_tokens']:.3g}" if g.get("stderr_tokens") else ""
            bound_t = "≥ " if g.get("lower_bound_tokens") else ""
            lines.append(f"  = {bound_t}{g['b_simple_tokens']:.4g}{pm_t} {w('tokens', lang)}")
    n = r["noise_band"]
    if n["ratio"] is not None:
        lines.append(
            f"{w('noise_band', lang)}: {n['observed_std']:.3g} / {n['predicted_std']:.3g} = {n['ratio']:.2f}"
        )
    rollups = r.get("rollups")
    if rollups:  # the rollup path (docs/report.md, "Rollups and scale"): what was read raw
        lines.append(
            f"{w('rollups', lang)}: {rollups['steps_read_raw']} / {rollups['steps_total']} {w('steps', lang)}, "
            f"{rollups['windows_read_raw']} / {rollups['windows']} × {rollups['every']}"
            + _in_part(rollups.get("windows_read_in_part"), lang)
        )
    if r.get("interventions"):  # `ddp-doctor run --set K=V` / ablate: this run is not the script as written
        sets = ", ".join(f"{k}={v}" for k, v in sorted(r["interventions"].items()))
        lines.append(f"{w('interventions', lang)}: {escape(sets)}")
    if r["in_progress"]:
        lines.append(f"[yellow]{w('in_progress', lang)}[/]")
    stopped = r.get("stopped")
    if isinstance(stopped, dict):  # who stopped the job and why (ddp-doctor watch --stop-on)
        who = (
            f"{stopped.get('by')} (pid {stopped.get('pid')} on {stopped.get('host')}, {stopped.get('time')})"
        )
        lines.append(
            f"[bold yellow]{w('stopped_by', lang)} {escape(who)}: {escape(stopped.get('reason'))}[/]"
        )
    status = r.get("exit_status") or {}
    if status.get("note"):  # e.g. a teardown abort after complete training (ddp_doctor.rundir.teardown)
        lines.append(f"[yellow]{w('exit_code', lang)} {r.get('exit_code')}: {escape(status['note'])}[/]")
    return lines


def _node_line(node: dict[str, Any]) -> str:
    name = node["node"] or node["host"] or "?"
    host = f" ({node['host']})" if node["node"] and node["host"] else ""
    return f"{name}{host}: ranks {_ranges(node['ranks'])}"


def render_console(diag: Diagnosis, console: Console, lang: Lang = "en") -> None:
    console.print(f"[bold]{w('title', lang)}[/] — {escape(str(diag.run_info['path']))}")
    failure = diag.run_info.get("failure")
    if failure:  # a failed rank is the first thing said (analysis/failure.py)
        console.print(f"[bold red]{escape(failure['summary'].get(lang))}[/]")
    answer = diag.run_info.get("oscillation")
    if answer:  # the question the user came with, answered first
        console.print(f"[bold]{escape(answer['summary'].get(lang))}[/]")
    for line in run_lines(diag, lang):
        console.print(line)
    if diag.run_info["problems"]:
        console.print(f"[yellow]{w('problems', lang)}:[/]")
        for p in diag.run_info["problems"]:
            console.print(f"  • {escape(p)}")
    table = Table(title=w("hypothesis", lang), show_lines=True, expand=True)
    table.add_column(w("hypothesis", lang), max_width=32)
    table.add_column(w("verdict", lang), no_wrap=True, min_width=10)
    table.add_column(w("summary", lang), ratio=1)
    for h in diag.hypotheses:
        summary = h.summary.get(lang)
        if len(summary) > SUMMARY_CHARS:
            summary = summary[: SUMMARY_CHARS - 1] + "…"
        guess = HYPOTHESES[h.id].guess.get(lang)
        table.add_row(
            f"{h.id}\n[dim]{escape(guess)}[/]",
            f"[{VERDICT_STYLE[h.verdict]}]{w(h.verdict, lang)}[/]",
            escape(summary),
        )
    console.print(table)
    confirmed = sorted(
        (f for f in diag.findings if f.status == "confirmed"), key=lambda f: SEVERITY_ORDER[f.severity]
    )
    console.print(f"[bold]{w('confirmed_findings', lang)}[/]")
    if not confirmed:
        console.print(f"  {w('none_confirmed', lang)}")
    for f in confirmed:
        console.print(
            f"[{SEVERITY_STYLE[f.severity]}]{w(f.severity, lang)}[/] [bold]{f.id}[/]: "
            f"{escape(f.summary_in(lang))}"
        )
        console.print(f"    [dim]{w('fix', lang)}:[/] {escape(f.fix_in(lang))}")
        thr = f.evidence.get("threshold")
        if thr:
            shown = thr.get(lang) if isinstance(thr, Text) else str(thr)  # a check's threshold_sentence
            console.print(f"    [dim]{w('threshold', lang)}:[/] {escape(shown)}")
    rest = Table(title=w("other_findings", lang), expand=True)
    rest.add_column(w("finding", lang), max_width=34)
    rest.add_column(w("status", lang), no_wrap=True, min_width=10)
    rest.add_column(w("summary", lang), ratio=1)
    for f in diag.findings:
        if f.status != "confirmed":
            rest.add_row(f.id, w(f.status, lang), escape(f.summary_in(lang)))
    console.print(rest)


def render_text(diag: Diagnosis, lang: Lang = "en", width: int = 120, color: bool = False) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf, width=width, force_terminal=color, no_color=not color, highlight=False, soft_wrap=False
    )
    render_console(diag, console, lang)
    return buf.getvalue()
