"""The per-step curves an exporter writes, named once for TensorBoard and W&B (docs/integrations.md).

x = optimizer steps completed (1-based, as HF's ``global_step``; an imported log keeps its own
step numbers). All values come from the diagnosis' context; nothing is recomputed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddp_doctor.analysis.diagnose import Diagnosis

PREFIX = "ddp_doctor"


@dataclass
class Curves:
    steps: np.ndarray  # [T] x values
    series: dict[str, np.ndarray]  # tag → [T] values (nan = no point)


def curves(diag: Diagnosis) -> Curves:
    ctx = diag.context
    s = ctx.series
    imported = diag.run_info.get("imported") or {}
    base = int(imported.get("step_base", 0)) if imported else 1
    out: dict[str, np.ndarray] = {f"{PREFIX}/loss/global": s.global_loss}
    if 0 in s.ranks and len(s.ranks) > 1:
        row = s.row(0)
        out[f"{PREFIX}/loss/rank0"] = s.local_loss[row]
        with np.errstate(invalid="ignore"):
            out[f"{PREFIX}/grad_norm/local_rank0"] = np.sqrt(s.gsq_local[row])
    out[f"{PREFIX}/grad_norm/global"] = ctx.grad_norm
    out[f"{PREFIX}/lr"] = s.lr
    out[f"{PREFIX}/loss_scale"] = s.scale
    out[f"{PREFIX}/b_simple"] = ctx.gns.trace
    pred, trend = ctx.noise.predicted_trace, ctx.noise.trend
    if pred.size and np.isfinite(pred).any():
        out[f"{PREFIX}/noise_band/trend"] = trend
        out[f"{PREFIX}/noise_band/upper"] = trend + pred
        out[f"{PREFIX}/noise_band/lower"] = trend - pred
    kept = {k: np.asarray(v, dtype=np.float64) for k, v in out.items() if v.size and np.isfinite(v).any()}
    return Curves(steps=s.steps + base, series=kept)


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
