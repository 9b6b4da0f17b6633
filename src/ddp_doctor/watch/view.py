"""What the watcher shows: a rich Live view on a terminal, one line per change otherwise.

The live view (redrawn after every refresh): the run's state and step, the "bug or noise?" answer
line, a loss sparkline for the global loss and for each rank (the whole run, in buckets), every
hypothesis with its current verdict (and what it was, when it changed), and the findings confirmed
so far with the step each was confirmed at. Plain mode (stdout not a terminal: CI logs, `tail -f`)
prints one line per new or changed verdict instead, prefixed with the step.
"""

from __future__ import annotations

import time
from typing import TextIO

import numpy as np
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ddp_doctor.analysis import figures
from ddp_doctor.core.catalog import HYPOTHESES
from ddp_doctor.core.terminal import safe
from ddp_doctor.report.text import SEVERITY_STYLE, VERDICT_STYLE, escape
from ddp_doctor.rundir.reader import _ranges
from ddp_doctor.watch.follow import Watcher
from ddp_doctor.watch.verdicts import Change, answer_decides_at, decides_at, last_step

BARS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 60
MAX_RANK_LINES = 8  # more ranks than this: the highest and lowest final loss, and a count
SHOWN_FINDINGS = 10
SUMMARY_CHARS = 160
ANSWER_CHARS = 600


def sparkline(values: np.ndarray, width: int = SPARK_WIDTH) -> str:
    """``values`` in ``width`` buckets (the mean of each), scaled min..max to eight bar heights;
    a bucket with no finite value is blank (nothing recorded, or NaN), ``!`` when it holds an inf."""
    if values.size == 0:
        return ""
    edges = np.linspace(0, values.size, min(width, values.size) + 1).astype(int)
    means = []
    for a, b in zip(edges[:-1], edges[1:]):
        chunk = values[a:b]
        finite = chunk[np.isfinite(chunk)]
        means.append(float(finite.mean()) if finite.size else (np.inf if np.isinf(chunk).any() else np.nan))
    m = np.asarray(means)
    ok = m[np.isfinite(m)]
    lo, hi = (float(ok.min()), float(ok.max())) if ok.size else (0.0, 0.0)
    out = []
    for v in m:
        if np.isnan(v):
            out.append(" ")
        elif np.isinf(v):
            out.append("!")
        else:
            out.append(BARS[0 if hi <= lo else int((v - lo) / (hi - lo) * (len(BARS) - 1) + 0.5)])
    return "".join(out)


def _last_finite(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else float("nan")


def _last(values: np.ndarray) -> str:
    v = _last_finite(values)
    return "—" if np.isnan(v) else f"{v:.4g}"


def _state(w: Watcher) -> str:
    if w.run is None:
        return f"[yellow]waiting[/]: {escape(w.tail.waiting or 'no run yet')}"
    if w.ended:
        return f"[bold]ended[/] (exit code {escape(w.run.manifest.get('exit_code'))})"
    return "[green]running[/]"


def header(w: Watcher) -> str:
    step = last_step(w.diag) if w.diag is not None else None
    ranks = sorted(w.run.ranks) if w.run is not None else []
    world = w.run.world_size if w.run is not None else "?"
    return (
        f"[bold]ddp-doctor watch[/] {escape(w.run_dir)} — {_state(w)}   step {step if step is not None else '—'}"
        f"   ranks {escape(_ranges(ranks)) or '—'} of {world}   refresh {w.last_refresh_s:.2f} s"
        f" ({time.strftime('%H:%M:%S')})"
    )


def answer_line(w: Watcher) -> str:
    if w.diag is None:
        return ""
    ans = w.diag.run_info.get("oscillation") or {}
    text = escape(str(ans.get("summary", ""))[:ANSWER_CHARS])
    at = answer_decides_at(ans, last_step(w.diag))
    return f"[bold]{text}[/]" + (f" [yellow](decides at step ~{at})[/]" if at else "")


def loss_lines(w: Watcher) -> Table:
    t = Table.grid(padding=(0, 1))
    if w.diag is None:
        return t
    ctx = w.diag.context
    loss = figures.loss(ctx).values
    t.add_row("global", Text(sparkline(loss), style="bold"), _last(loss))
    local = figures.local_loss(ctx)
    rows = list(range(len(local)))
    if len(rows) > MAX_RANK_LINES:  # the extremes of the last finite loss, not a random few
        last = [_last_finite(local[i][1].values) for i in rows]
        order = np.argsort(np.asarray(last))  # ranks with no finite loss (nan) sort last: shown
        rows = sorted({*order[: MAX_RANK_LINES // 2].tolist(), *order[-MAX_RANK_LINES // 2 :].tolist()})
    for i in rows:
        rank, curve = local[i]
        t.add_row(f"rank {rank}", sparkline(curve.values), _last(curve.values))
    if len(rows) < len(local):
        t.add_row("", f"[dim]({len(local) - len(rows)} more ranks not shown)[/]", "")
    return t


def hypotheses_table(w: Watcher) -> Table:
    t = Table(show_header=True, header_style="bold", expand=False, box=None, padding=(0, 1))
    t.add_column("hypothesis")
    t.add_column("verdict")
    t.add_column("since")
    t.add_column("next")
    if w.diag is None:
        return t
    step = last_step(w.diag)
    every = w.diag.run_info.get("every")
    by_id = {f.id: f for f in w.diag.findings}
    changed = {c.id: c for c in w.tracker.changes if c.kind == "hypothesis"}
    for h in w.diag.hypotheses:
        c = changed.get(h.id)
        was = f" [dim](was {c.old})[/]" if c is not None and c.old is not None else ""
        waits = [
            (decides_at(by_id[f], step, every if isinstance(every, int) else None), f) for f in h.findings
        ]
        nxt = ", ".join(f"{fid} decides at ~{at}" for at, fid in waits if at is not None)
        t.add_row(
            escape(h.id),
            f"[{VERDICT_STYLE[h.verdict]}]{h.verdict}[/]{was}",
            f"step {c.step}" if c is not None and c.step is not None else "",
            f"[yellow]{escape(nxt)}[/]" if nxt else "",
        )
    return t


def findings_lines(w: Watcher) -> list[str]:
    out = []
    shown = [c for c in w.tracker.changes if c.kind == "finding"][-SHOWN_FINDINGS:]
    for c in reversed(shown):
        style = SEVERITY_STYLE.get(c.severity or "info", "")
        # the step the watcher saw it at (the summary says where in the run it happened)
        verb = "confirmed" if c.new == "confirmed" else f"no longer confirmed ({c.new})"
        out.append(f"[{style}]{escape(c.id)}[/] {verb} at step {c.step}: {escape(c.summary[:SUMMARY_CHARS])}")
    return out


def render(w: Watcher) -> RenderableType:
    """The live view of the watcher's current state."""
    parts: list[RenderableType] = [header(w)]
    if w.diag is not None:
        parts += [answer_line(w), "", "[bold]loss[/] (whole run)", loss_lines(w), "", hypotheses_table(w)]
        found = findings_lines(w)
        parts += [
            "",
            "[bold]findings confirmed[/] (newest first)" if found else "[dim]no finding confirmed yet[/]",
        ]
        parts += found
    for note in w.actions.notes[-5:]:
        parts.append(f"[yellow]{escape(note)}[/]")
    return Group(*parts)


def change_line(c: Change) -> str:
    """One plain line for a change (terminal-safe: run text escaped)."""
    at = f"step {c.step}" if c.step is not None else "step —"
    was = f"{c.old} -> " if c.old is not None else ""
    flip = " (FLIP)" if c.flip else ""
    if c.kind == "finding":
        what = f"finding {c.id} [{c.severity}]: {was}{c.new}{flip}"
    elif c.kind == "hypothesis":
        what = f"hypothesis {c.id}: {was}{c.new}{flip}"
    else:
        what = f"bug or noise: {was}{c.new}{flip}"
    cut = ANSWER_CHARS if c.kind == "answer" else SUMMARY_CHARS  # the answer is the line users came for
    return safe(f"[watch] {at}  {what} — {c.summary[:cut]}")


def print_changes(changes: list[Change], out: TextIO) -> None:
    for c in changes:
        out.write(change_line(c) + "\n")
    out.flush()


def final_lines(w: Watcher, code: int, notes: bool = True) -> list[str]:
    """What is printed when the run has ended (``notes``: the alert and stop notes too, when they
    were not printed as they happened)."""
    lines = []
    if w.run is not None and w.diag is not None:
        ans = (w.diag.run_info.get("oscillation") or {}).get("summary", "")
        lines.append(f"run ended at step {last_step(w.diag)} (exit code {w.run.manifest.get('exit_code')})")
        lines.append(str(ans))
        confirmed = [c for c in w.tracker.changes if c.kind == "finding" and c.new == "confirmed"]
        counts = {v: sum(1 for h in w.diag.hypotheses if h.verdict == v) for v in VERDICT_STYLE}
        lines.append(
            f"{len(HYPOTHESES)} hypotheses: "
            + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
            + f"; {len(confirmed)} finding confirmation(s) seen"
        )
    else:
        lines.append(f"the run ended without rank data: {w.tail.waiting}")
    if w.actions.stopped is not None:
        lines.append(f"stopped the job: {w.actions.stopped['reason']}")
    if notes:
        lines += w.actions.notes
    lines.append(f"exit code {code}; the full report: ddp-doctor report {w.run_dir}")
    return [safe(f"[watch] {line}") for line in lines]
