"""The rollup path's findings: what each one covered of the whole run (rundir/rollup_read.py).

On the rollup path the checks read the windows the report read raw — the first steps, the last
window, every window the rollups flag (non-finite values, skipped steps, spike marks, a change of
step structure, the reduced series' screens, a change in the ranks' input agreement), the steps
asked for and an even sample — and the rollups stand for the other windows: each of them was
screened and showed none of what would have made it read raw. So a finding's coverage is the share
of the steps it covered among those read, over the whole run, and its basis says how the run was
read. Its numbers are the raw windows' (docs/report.md, "Rollups and scale", measures how far they
are from the raw path's on the suite's runs).
"""

from __future__ import annotations

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import coverage, coverage_text
from ddp_doctor.analysis.quantities.noise_band import WITHIN_NOISE_RATIO
from ddp_doctor.core.catalog import Text
from ddp_doctor.core.findings import Finding


def how_read(ctx: Context) -> Text:
    """One sentence: how the run was read (the rollup path), for a coverage basis and the run facts."""
    view = ctx.run.rollups
    if view is None:
        return Text("", "")
    raw, total = ctx.optimizer_steps, ctx.steps_total
    n, w = len(view.selected), view.windows
    return Text(
        f"rollup path: {raw} of {total} steps read raw in {n} of {w} windows of {view.every}, "
        "the other windows screened by their rollups",
        f"汇总路径：{total} 步中 {raw} 步按原始记录读取（{w} 个 {view.every} 步窗口中的 {n} 个），"
        "其余窗口由其汇总筛查",
    )


def widen(findings: list[Finding], ctx: Context) -> None:
    """Each finding's coverage over the whole run instead of the steps read (rollup path only)."""
    if ctx.run.rollups is None:
        return
    total = ctx.steps_total
    how = how_read(ctx)
    for f in findings:
        old = f.coverage
        if old is None:
            continue
        basis = "; ".join(b for b in (str(old.get("basis") or ""), how.en) if b)
        basis_zh = "；".join(b for b in (str(old.get("basis_zh") or ""), how.get("zh")) if b)
        share = min(max(float(old.get("fraction") or 0.0), 0.0), 1.0)
        new = coverage(round(share * total), total, basis, basis_zh)
        before_en, before_zh = coverage_text(old), coverage_text(old, "zh")
        f.coverage = new
        if before_en in f.summary.en:
            f.summary = Text(
                f.summary.en.replace(before_en, coverage_text(new)),
                f.summary.get("zh").replace(before_zh, coverage_text(new, "zh")),
            )


# A statistic estimated from the windows read raw decides its finding only when it lies this far
# (relative) from the finding's threshold: closer, the sample may fall on the other side of it than
# the whole run, so the report reads more windows (diagnose.diagnose_run). The noise band's ratio has
# a sampling error of ~3-5 % on a few hundred steps.
UNDECIDED_MARGIN = 0.1
WIDER_SAMPLE = 8  # the second read samples this many times more windows


def undecided(ctx: Context) -> list[str]:
    """Findings whose sampled statistic lies within UNDECIDED_MARGIN of its threshold (rollup path)."""
    if ctx.run.rollups is None:
        return []
    out = []
    ratio = ctx.noise.ratio
    if ratio is not None and abs(ratio / WITHIN_NOISE_RATIO - 1.0) < UNDECIDED_MARGIN:
        out.append("oscillation-within-noise")
    return out
