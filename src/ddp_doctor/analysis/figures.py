"""Every per-step curve a report shows, defined once: the HTML charts and the exporters
(TensorBoard, W&B; docs/integrations.md) take their numbers from here and compute nothing.

A curve's key is its name everywhere (the export tag is ``ddp_doctor/<key>``), so one name means one
set of numbers in every output. Values are per optimizer step (index 0..T-1 of the context's
series; nan = no point), except the update ratios, sampled on their own steps (``Curve.x``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.quantities.data_overlap import overlap_by_step

# The minibatch-noise band is trend ± this many predicted standard deviations (σ_pred of
# analysis/quantities/noise_band.py): ±2σ holds ~95 % of a normal step-to-step fluctuation.
NOISE_BAND_SIGMAS = 2.0


@dataclass(frozen=True)
class Curve:
    key: str  # "loss/global", "grad_norm/local_rank0", "update_ratio/<group>", ...
    values: np.ndarray  # float64 [T], or [len(x)] with x
    x: np.ndarray | None = None  # step indices of the values, when not 0..T-1


def _curve(key: str, values: np.ndarray, x: np.ndarray | None = None) -> Curve:
    return Curve(key, np.asarray(values, dtype=np.float64), x)


def local_loss(ctx: Context) -> list[tuple[int, Curve]]:
    """Each rank's local loss (the loss its own micro-batches gave), in rank order."""
    s = ctx.series
    return [(r, _curve(f"loss/rank{r}", s.local_loss[i])) for i, r in enumerate(s.ranks)]


def loss(ctx: Context) -> Curve:
    """The global loss (token-weighted over ranks: what a single-process run would log)."""
    return _curve("loss/global", ctx.series.global_loss)


def grad_norm(ctx: Context) -> Curve:
    """The global (all-reduced) gradient norm: comm hook, else clip_grad_norm_'s total_norm."""
    return _curve("grad_norm/global", ctx.grad_norm)


def grad_norm_local_rank0(ctx: Context) -> Curve | None:
    """Rank 0's local gradient norm (before the all-reduce); None without rank 0."""
    s = ctx.series
    if 0 not in s.ranks:
        return None
    with np.errstate(invalid="ignore"):
        return _curve("grad_norm/local_rank0", np.sqrt(s.gsq_local[s.row(0)]))


def grad_norm_local_rms(ctx: Context) -> Curve:
    """The local gradient norm, root mean square over the ranks that recorded it at each step."""
    gsq = ctx.series.gsq_local
    finite = np.isfinite(gsq)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _curve(
            "grad_norm/local_rms", np.sqrt(np.where(finite, gsq, 0.0).sum(axis=0) / finite.sum(axis=0))
        )


def noise_band(ctx: Context) -> tuple[Curve, Curve, Curve] | None:
    """(trend, lower, upper): the loss's rolling median ± NOISE_BAND_SIGMAS × σ_pred; None when no
    step has a predicted σ (a single micro-batch per step has no spread to predict from)."""
    nb = ctx.noise
    pred = nb.predicted_trace
    if not pred.size or not np.isfinite(pred).any():
        return None
    half = NOISE_BAND_SIGMAS * pred
    return (
        _curve("noise_band/trend", nb.trend),
        _curve("noise_band/lower", nb.trend - half),
        _curve("noise_band/upper", nb.trend + half),
    )


def step_numbers(ctx: Context) -> np.ndarray:
    """The optimizer step each value belongs to, as the exporters write it (x of their scalars):
    steps completed, 1-based like HF's ``global_step``; an imported log keeps its own numbering."""
    imported = ctx.run.manifest.get("imported")
    base = int(imported.get("step_base", 0)) if isinstance(imported, dict) and imported else 1
    steps: np.ndarray = ctx.series.steps + base
    return steps


def step_axis(ctx: Context) -> np.ndarray | None:
    """The step number of each value of the per-step curves when they are not 0..T-1 (the rollup
    path reads windows of the run: rundir/rollup_read.py); None when they are."""
    return None if ctx.series.dense else ctx.series.steps


def effective_batch(ctx: Context) -> Curve | None:
    """The measured effective batch (samples per optimizer step) as a flat line beside B_simple;
    None when it was not measured."""
    if not ctx.batch.samples:
        return None
    return _curve("effective_batch/samples", np.full(ctx.series.n_steps, ctx.batch.samples))


def lr(ctx: Context) -> Curve:
    return _curve("lr", ctx.series.lr)


def loss_scale(ctx: Context) -> Curve:
    return _curve("loss_scale", ctx.series.scale)


def b_simple(ctx: Context) -> Curve:
    """The trailing-window gradient noise scale B_simple (analysis/quantities/gns)."""
    return _curve("b_simple", ctx.gns.trace)


def update_ratios(ctx: Context) -> list[Curve]:
    """|Δθ| / |θ| per parameter group, on the steps it was sampled (--level full)."""
    if ctx.ratios is None or not ctx.ratios.trace:
        return []
    x = np.asarray(ctx.ratios.steps, dtype=float)
    return [
        _curve(f"update_ratio/{g}", np.asarray(v, dtype=float), x)
        for g, v in sorted(ctx.ratios.trace.items())
    ]


def data_overlap(ctx: Context) -> Curve | None:
    """Share of each step's samples that another rank also drew (None: no sample IDs recorded)."""
    same, total, _ = overlap_by_step(ctx.run, ctx.series)
    if not total.sum():
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        return _curve("data_overlap/share", np.where(total > 0, same / total, np.nan))


def shown(curve: Curve | None) -> bool:
    """Whether a curve has anything to draw (a series that was not measured is all nan)."""
    return curve is not None and bool(curve.values.size) and bool(np.isfinite(curve.values).any())
