"""The per-step curves an exporter writes, named once for TensorBoard and W&B (docs/integrations.md).

x = optimizer steps completed (``figures.step_numbers``). Every curve is defined in analysis/figures.py (the HTML charts draw the same ones);
this module only picks which to export.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddp_doctor.analysis import figures
from ddp_doctor.analysis.diagnose import Diagnosis

PREFIX = "ddp_doctor"


@dataclass
class Curves:
    steps: np.ndarray  # [T] x values
    series: dict[str, np.ndarray]  # tag → [T] values (nan = no point)


def curves(diag: Diagnosis) -> Curves:
    ctx = diag.context
    s = ctx.series
    chosen: list[figures.Curve | None] = [figures.loss(ctx)]
    if 0 in s.ranks and len(s.ranks) > 1:
        chosen += [dict(figures.local_loss(ctx))[0], figures.grad_norm_local_rank0(ctx)]
    chosen += [figures.grad_norm(ctx), figures.lr(ctx), figures.loss_scale(ctx), figures.b_simple(ctx)]
    band = figures.noise_band(ctx)
    if band is not None:
        trend, lower, upper = band
        chosen += [trend, upper, lower]
    kept = {f"{PREFIX}/{c.key}": c.values for c in chosen if c is not None and figures.shown(c)}
    return Curves(steps=figures.step_numbers(ctx), series=kept)


def findings_markdown(diag: Diagnosis) -> str:
    """Verdicts and the findings that are not 'not measured', as a Markdown table (TensorBoard text)."""
    lines = ["| hypothesis | verdict |", "|---|---|"]
    lines += [f"| {h.id} | {h.verdict} |" for h in diag.hypotheses]
    lines += ["", "| finding | status | severity | summary |", "|---|---|---|---|"]
    for f in diag.findings:
        if f.status != "not-measured":
            summary = f.summary.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {f.id} | {f.status} | {f.severity} | {summary} |")
    return "\n".join(lines)
