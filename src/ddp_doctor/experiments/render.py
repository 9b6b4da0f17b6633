"""Text tables for `verify` and `ablate` (rich), one function per table."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ddp_doctor.core.terminal import safe
from ddp_doctor.experiments.ablate import AblateResult
from ddp_doctor.experiments.stability import METRICS
from ddp_doctor.experiments.verify import VerifyResult


def _s(text: object) -> str:
    """A name from the user's run (a variant's --set values, a row label): markup and control
    characters escaped (terminal.safe)."""
    return escape(safe(text))


def _e(x: float | None) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.1e}" if x else "0"


def verify_table(result: VerifyResult, console: Console) -> None:
    cfg = result.config
    table = Table(
        title=f"verify: {cfg.world} gloo ranks, accum {cfg.accum}, preset {cfg.preset}, "
        f"{cfg.steps} optimizer step(s), fp32"
    )
    for col in (
        "row",
        "grad max abs",
        "grad rel",
        "param max abs",
        "param rel",
        "replica spread",
        "tol (rel)",
        "verdict",
    ):
        table.add_column(col, justify="left" if col in ("row", "verdict") else "right")
    for r in result.rows:
        mark = "[green]✓[/]" if r.as_expected else "[red]✗[/]"
        verdict = f"{mark} {r.verdict}" + ("" if r.expect == "equal" else " (expected)")
        table.add_row(
            _s(r.label),
            _e(r.grad_max_abs),
            _e(r.grad_rel),
            _e(r.param_max_abs),
            _e(r.param_rel),
            _e(r.replica_spread),
            f"{r.tolerance:.0e}",
            verdict,
        )
    console.print(table)
    for f in result.findings:
        console.print(f"[bold]{f.id}[/] {f.status}: {_s(f.summary)}")
    console.print("all rows as expected" if result.ok else "[red]some rows are NOT as expected[/]")


def _ci(low: float, high: float) -> str:
    if math.isnan(low):
        return ""
    return f" [{low:+.3g}, {high:+.3g}]"


def ablate_table(result: AblateResult, console: Console) -> None:
    table = Table(
        title=f"ablate: what actually helped ({result.seeds} seed(s) each; "
        "mean, Δ vs baseline with 95% bootstrap CI; lower is better)"
    )
    table.add_column("#", justify="right")
    table.add_column("variant")
    for m in METRICS:
        table.add_column(m, justify="right")
    table.add_column("score", justify="right")
    table.add_column("verdict")
    for i, v in enumerate(result.variants):
        cells = []
        for m in METRICS:
            d = v.diffs.get(m)
            values = [x for x in v.metrics[m] if not math.isnan(x)]
            if d is None:
                cells.append(
                    f"{sum(values) / len(values):.3g}"
                    if values and all(map(math.isfinite, values))
                    else ("inf" if values else "—")
                )
            else:
                cells.append(f"{d.variant:.3g}{_ci(d.ci_low, d.ci_high)}")
        extra = f" ({v.failed} failed)" if v.failed else ""
        extra += f" ({v.diverged} diverged)" if v.diverged else ""
        score = "" if v.verdict == "baseline" or math.isnan(v.score) else f"{v.score:+.2f}"
        table.add_row(str(i) if i else "", _s(v.name) + extra, *cells, score, v.verdict)
    console.print(table)
