"""The rollup path's findings: which windows decide each one, and what it covered of the whole run.

On the rollup path (rundir/rollup_read.py) the report reads raw the first steps, the last window,
every window the rollups flag (non-finite values, skipped steps, spike marks, a change of step
structure, the reduced series' screens, a change in the ranks' input agreement), the steps asked
for, and an even sample; the rollups stand for the other windows: each of them was screened and
showed none of what made a window read raw.

* Findings about events (a spike, a non-finite value, a skipped step, a clip before unscale, a
  gradient that differs across ranks, ...) and about the run's structure are decided on every
  window read: the flagged windows are where the events are.
* Findings that are statistics over steps (:data:`FROM_SAMPLE`: the noise band, the noise scale,
  skew, the loss-normalization CVs, medians of ratios, shares of steps) are decided on the even
  sample alone (:func:`sample_context`): the flagged windows are read *because* they are unusual,
  and would bias a statistic of the whole run (a gradient-spike window inflates the noise scale's
  estimate; clipping clusters where the gradient spikes). The run facts (effective batch, noise
  band, the oscillation answer) come from the sample too; B_simple comes from the rollups' sums over
  every step where they determine it (:func:`whole_run_gns`), else from the sample.

A finding's coverage is the share of the steps it covered among those it was decided on, over the
whole run, and its basis says how the run was read. Its numbers are those windows' (docs/report.md,
"Rollups and scale", measures how far they are from the raw path's on the suite's runs).
"""

from __future__ import annotations

import dataclasses
import math

from ddp_doctor.analysis.context import Context, build_context, fsdp1_replicas
from ddp_doctor.analysis.make import coverage, coverage_text
from ddp_doctor.analysis.quantities.gns import GNS, from_rollups
from ddp_doctor.analysis.quantities.noise_band import WITHIN_NOISE_RATIO
from ddp_doctor.analysis.quantities.shards import is_fsdp2
from ddp_doctor.core.catalog import Text
from ddp_doctor.core.findings import Finding
from ddp_doctor.rundir.rankfile.columns import take_steps
from ddp_doctor.rundir.reader import RunData

# Statistics over steps: decided on the even sample on the rollup path (module doc).
FROM_SAMPLE = frozenset(
    {
        "rank-data-skew",
        "accum-loss-unscaled",
        "loss-normalization-variable-tokens",
        "loss-norm-per-rank-tokens",
        "rank0-only-loss-log",
        "oscillation-within-noise",
        "batch-below-noise-scale",
        "clip-saturated",
        "grad-scale-wrong",
        "training-not-progressing",
    }
)


def sample_context(run: RunData, ctx: Context) -> Context | None:
    """The context of the even sample's windows alone (rollup path, steps read with gaps); None
    when every step was read (nothing to sample) or the sample holds no step."""
    view = run.rollups
    if view is None or ctx.series.dense:
        return None
    ranks = {}
    for rank, data in run.ranks.items():
        c = data.steps
        if c is not None and len(c):
            data = dataclasses.replace(data, steps=take_steps(c, view.sampled(c.step)))
        ranks[rank] = data
    if not any(d.steps is not None and len(d.steps) for d in ranks.values()):
        return None
    return build_context(dataclasses.replace(run, ranks=ranks))


def how_read(ctx: Context, sampled_from: bool = False) -> Text:
    """One sentence: how the run was read (the rollup path), for a coverage basis."""
    view = ctx.run.rollups
    if view is None:
        return Text("", "")
    raw, total = ctx.optimizer_steps, ctx.steps_total
    n, w = len(view.selected), view.windows
    if sampled_from:
        k = sum("sample" in why for why in view.selected.values())
        return Text(
            f"rollup path: decided on the even sample, {raw} of {total} steps in {k} of {w} windows "
            f"of {view.every} spread over the run; every window screened by its rollup",
            f"汇总路径：基于均匀样本判断，{total} 步中的 {raw} 步（{w} 个 {view.every} 步窗口中的 {k} 个，"
            "分布于整个运行）；每个窗口都由其汇总筛查",
        )
    p = len(view.parts)
    return Text(
        f"rollup path: {raw} of {total} steps read raw in {n} of {w} windows of {view.every}"
        + (f" ({p} of them in part: the steps the sample, a spike's history or its marks need)" if p else "")
        + ", the other windows screened by their rollups",
        f"汇总路径：{total} 步中 {raw} 步按原始记录读取（{w} 个 {view.every} 步窗口中的 {n} 个"
        + (f"，其中 {p} 个只读样本、尖峰历史或尖峰标记所需的步" if p else "")
        + "），其余窗口由其汇总筛查",
    )


def widen(findings: list[Finding], ctx: Context, sampled_from: bool = False) -> None:
    """Each finding's coverage over the whole run instead of the steps read (rollup path only)."""
    if ctx.run.rollups is None:
        return
    total = ctx.steps_total
    how = how_read(ctx, sampled_from)
    for f in findings:
        old = f.coverage
        if old is None:
            continue
        got = old.get("basis")
        was = got if isinstance(got, Text) else Text(str(got or ""))
        basis = Text(
            "; ".join(b for b in (was.en, how.en) if b),
            "；".join(b for b in (was.get("zh"), how.get("zh")) if b),
        )
        share = min(max(float(old.get("fraction") or 0.0), 0.0), 1.0)
        new = coverage(round(share * total), total, basis)
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


def whole_run_gns(ctx: Context, gns: GNS) -> GNS:
    """``gns`` (the even sample's) with B_simple over every step from the rollups' sums, where they
    determine it (quantities/gns.py ``from_rollups``: DDP, unsharded, one batch size); the
    token-based value and the plotted trace stay the sample's."""
    view = ctx.run.rollups
    if view is None or is_fsdp2(ctx.run) or fsdp1_replicas(ctx.run) is not None:
        return gns
    valid = ctx.sync.every_micro == 0 and ctx.sync.last_unsynced == 0
    got = from_rollups(view, ctx.world_size, valid)
    if got is None:
        return gns
    b, se, lower, steps = got
    return dataclasses.replace(
        gns,
        b_simple=b,
        stderr=None if math.isnan(se) else se,
        lower_bound=lower,
        steps_used=steps,
        reason=None,
    )
