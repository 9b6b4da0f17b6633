"""One definition per curve (analysis/figures.py): exporters and the HTML report show the same numbers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ddp_doctor.analysis import figures
from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.report.curves import PREFIX, curves
from ddp_doctor.report.html import render_html


def test_exported_curves_are_the_figures_curves(make_run: Callable[..., Path]) -> None:
    diag = diagnose(make_run(world_size=3, steps=90, faults=("loss-spike",)))
    ctx = diag.context
    by_key = {
        c.key: c for c in [figures.loss(ctx), figures.grad_norm(ctx), figures.lr(ctx), figures.b_simple(ctx)]
    }
    by_key.update({c.key: c for _, c in figures.local_loss(ctx)})
    local0 = figures.grad_norm_local_rank0(ctx)
    assert local0 is not None
    by_key[local0.key] = local0
    band = figures.noise_band(ctx)
    assert band is not None
    by_key.update({c.key: c for c in band})
    exported = curves(diag).series
    assert f"{PREFIX}/noise_band/upper" in exported
    for tag, values in exported.items():
        np.testing.assert_array_equal(values, by_key[tag.removeprefix(PREFIX + "/")].values, err_msg=tag)
    # the band is trend ± NOISE_BAND_SIGMAS × the predicted std, in the exports as in the HTML legend
    trend, lower, upper = band
    np.testing.assert_allclose(
        upper.values - trend.values, figures.NOISE_BAND_SIGMAS * ctx.noise.predicted_trace
    )
    np.testing.assert_allclose(
        trend.values - lower.values, figures.NOISE_BAND_SIGMAS * ctx.noise.predicted_trace
    )
    assert f"± {figures.NOISE_BAND_SIGMAS:g}σ" in render_html(diag)


def test_local_norms_have_distinct_names(make_run: Callable[..., Path]) -> None:
    # rank 0's local gradient norm and the RMS over ranks are two curves, never one name for both
    ctx = diagnose(make_run(world_size=2, steps=40)).context
    rank0, rms = figures.grad_norm_local_rank0(ctx), figures.grad_norm_local_rms(ctx)
    assert rank0 is not None and rank0.key != rms.key
    gsq = ctx.series.gsq_local
    np.testing.assert_allclose(rms.values, np.sqrt(np.nanmean(gsq, axis=0)))
    np.testing.assert_allclose(rank0.values, np.sqrt(gsq[ctx.series.row(0)]))
