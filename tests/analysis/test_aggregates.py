"""The fast paths give the results of the plain ones (docs/report.md, "Speed and scale").

* every report is the same with and without the column cache (written, then read back);
* the cross-rank aggregates the analysis computes vectorised (Series, the noise-band moments, the
  effective batch) equal a plain per-record loop over the JSON lines (json.loads, no Arrow, no
  numpy per rank), on runs with uneven ranks, missing steps, damaged lines and non-finite values;
* the row medians (one np.partition) equal numpy's np.median / np.nanmedian row by row, and the
  line scan (numpy over the bytes) splits a file as ``bytes.split(b"\\n")`` does.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from fixtures.synth_run import SynthSpec, damage, write_run
from hypothesis import given, settings
from hypothesis import strategies as st

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.analysis.quantities.noise_band import _micro_moments
from ddp_doctor.analysis.quantities.series import build_series
from ddp_doctor.analysis.quantities.spikes import window_median
from ddp_doctor.report.command import render
from ddp_doctor.rundir import rankfile, records
from ddp_doctor.rundir.reader import read_run


def _drop_steps(run: Path, rank: int, steps: set[int]) -> None:
    f = records.rank_file(run, rank)
    keep = [
        line
        for line in f.read_bytes().split(b"\n")
        if not (line.startswith(records.line_prefix("step")) and json.loads(line)["step"] in steps)
    ]
    f.write_bytes(b"\n".join(keep))


def _wrong_type(run: Path, rank: int, step: int) -> None:
    f = records.rank_file(run, rank)
    lines = f.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(records.line_prefix("step")) and json.loads(line)["step"] == step:
            lines[i] = line.replace(b'"samples":[', b'"samples":"x","was":[')
    f.write_bytes(b"\n".join(lines))


def _shape(tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    if name == "uneven":  # rank 1 one step short, an extra micro-step every 10 steps
        return write_run(out, SynthSpec(world_size=3, steps=150, faults=("uneven", "rank-skew")))
    if name == "gaps":  # steps missing on two ranks, accumulation 3, a field of the wrong type
        write_run(out, SynthSpec(world_size=3, steps=150, accum=3, faults=("per-microbatch-mean-loss",)))
        _drop_steps(out, 1, set(range(40, 52)))
        _drop_steps(out, 2, {0, 7, 99, 149})
        _wrong_type(out, 0, 20)
        damage(out, drop_end=True)  # in progress
        return out
    if name == "damaged":  # truncated, corrupt, a rank missing
        write_run(out, SynthSpec(world_size=4, steps=150, faults=("loss-spike",)))
        damage(out, truncate_rank=1, corrupt_rank=2, drop_rank=3)
        return out
    if name == "nonfinite":  # the writer's "nan"/"inf" strings, fp16 skips
        return write_run(out, SynthSpec(world_size=2, steps=150, faults=("nonfinite", "fp16-overflow")))
    raise ValueError(name)


SHAPES = ("uneven", "gaps", "damaged", "nonfinite")


@pytest.mark.parametrize("shape", SHAPES)
def test_reports_are_identical_with_and_without_the_column_cache(tmp_path, monkeypatch, shape):
    run = _shape(tmp_path, shape)
    plain = diagnose_run(read_run(run, use_cache=False))
    monkeypatch.setattr(rankfile.cache, "CACHE_MIN_BYTES", 1)
    written = diagnose_run(read_run(run))  # parses and writes the cache
    assert any((run / records.CACHE_DIR).glob("*.arrow"))
    cached = diagnose_run(read_run(run))  # reads it back
    for fmt in ("json", "text"):
        assert render(written, fmt) == render(plain, fmt)
        assert render(cached, fmt) == render(plain, fmt)


# --- the plain per-record path ------------------------------------------------------------------


def _records(run: Path) -> dict[int, dict[int, dict]]:
    """rank → step → the first readable step record, by json.loads line by line (the reader's rules:
    a line without its newline is not read, a corrupt line is skipped, the first of duplicates kept)."""
    out: dict[int, dict[int, dict]] = {}
    for f in sorted((run / records.RANKS_DIR).glob("rank-*.jsonl")):
        rank = records.rank_of_file_name(f.name)
        steps: dict[int, dict] = {}
        for line in f.read_bytes().split(b"\n")[:-1]:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("kind") == "step" and isinstance(rec.get("step"), int):
                steps.setdefault(rec["step"], rec)
        out[rank] = steps
    return out


def _num(v) -> float:
    return rankfile.num(v) if isinstance(v, (int, float, str)) and not isinstance(v, bool) else math.nan


def _micro(rec: dict) -> list[tuple[float, float, float]]:
    """(loss-function mean m, valid tokens n, samples) of each micro-step of one step record."""
    fns = rec.get("loss_fn") or []
    samples = rec.get("samples") if isinstance(rec.get("samples"), list) else []
    out = []
    for i in range(rec["micro_steps"]):
        fn = fns[i] if i < len(fns) and isinstance(fns[i], dict) else {}
        value, n = _num(fn.get("value")), _num(fn.get("n_valid"))
        if fn.get("reduction") == "sum":
            value = value / n if n > 0 else math.nan
        out.append((value, n, _num(samples[i]) if i < len(samples) else math.nan))
    return out


def _plain_aggregates(run: Path, T: int) -> dict[str, np.ndarray]:
    """Per step, over ranks, in plain Python: the token-weighted global loss (series.py), the noise
    band's Σk, Σk·m, Σk·m², M (noise_band.py), and samples per rank."""
    recs = _records(run)
    loss = np.full((len(recs), T), math.nan)
    weight = np.full((len(recs), T), math.nan)
    samples = np.full((len(recs), T), math.nan)
    sk, skm, skm2, cnt = (np.zeros(T) for _ in range(4))
    for row, (_rank, steps) in enumerate(sorted(recs.items())):
        for t, rec in steps.items():
            if not 0 <= t < T:
                continue
            micro = _micro(rec)
            finite = [(m, n) for m, n, _ in micro if math.isfinite(m) and math.isfinite(n)]
            den = sum(n for m, n in finite)
            num = sum(m * n for m, n in finite)
            loss[row, t] = math.nan if any(not math.isfinite(m) for m, _, _ in micro) else num / den
            weight[row, t] = den
            samples[row, t] = sum(s for _, _, s in micro)
            for m, n, _ in micro:
                if math.isfinite(m) and math.isfinite(n) and n > 0:
                    sk[t] += n
                    skm[t] += n * m
                    skm2[t] += n * m * m
                    cnt[t] += 1
    present = np.isfinite(loss) & np.isfinite(weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        glob = np.where(present, weight * loss, 0.0).sum(axis=0) / np.where(present, weight, 0.0).sum(axis=0)
    glob[(np.isnan(loss) & ~np.isnan(weight)).any(axis=0)] = math.nan
    return dict(local_loss=loss, samples=samples, global_loss=glob, sk=sk, skm=skm, skm2=skm2, cnt=cnt)


@pytest.mark.parametrize("shape", ["uneven", "gaps", "damaged"])
def test_vectorised_cross_rank_aggregates_equal_a_plain_loop_over_the_records(tmp_path, shape):
    path = _shape(tmp_path, shape)
    run = read_run(path, use_cache=False)
    series = build_series(run)
    plain = _plain_aggregates(path, series.n_steps)
    sk, skm, skm2, cnt, _ = _micro_moments(run, series)
    fast = dict(
        local_loss=series.local_loss,
        samples=series.samples,
        global_loss=series.global_loss,
        sk=sk,
        skm=skm,
        skm2=skm2,
        cnt=cnt,
    )
    for name, expected in plain.items():
        np.testing.assert_allclose(fast[name], expected, rtol=1e-12, atol=0, equal_nan=True, err_msg=name)
    assert np.isnan(series.global_loss).sum() < series.n_steps  # the comparison compared numbers


# --- row medians and the line scan ---------------------------------------------------------------


def _numpy_row_medians(view: np.ndarray) -> np.ndarray:
    """The medians as the analysis took them before: np.median over the rows without nan,
    np.nanmedian over the rows with (both with axis=1: numpy's 2-D paths)."""
    out = np.empty(view.shape[0])
    has_nan = np.isnan(view).any(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if (~has_nan).any():
            out[~has_nan] = np.median(view[~has_nan], axis=1)
        if has_nan.any():
            out[has_nan] = np.nanmedian(view[has_nan], axis=1)
    return out


_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, 1.0, -1.0, 2.5, math.nan, math.inf, -math.inf, 1e308, -1e308]),
)


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 52), data=st.data())
def test_row_medians_equal_numpy_median_and_nanmedian(width, data):
    rows = data.draw(st.integers(1, 12))
    view = np.array(data.draw(st.lists(_values, min_size=rows * width, max_size=rows * width)))
    view = view.reshape(rows, width)
    assert np.array_equal(window_median(view), _numpy_row_medians(view), equal_nan=True)


_PREFIX = records.line_prefix("step")
_pieces = st.sampled_from([_PREFIX, b"\n", b"{", b"}", b" ", b"\r", b'{"kind":"st', b"x", b"\n\n", b"\xff"])


@settings(max_examples=100, deadline=None)
@given(raw=st.lists(_pieces, max_size=40).map(b"".join))
def test_line_scan_splits_as_bytes_split(raw):
    starts, ends, step_like = rankfile.scan._scan_lines(raw, _PREFIX)
    lines = raw.split(b"\n")[:-1]  # complete lines; the tail is not a line
    assert [raw[a:b] for a, b in zip(starts.tolist(), ends.tolist())] == lines
    assert step_like.tolist() == [line.startswith(_PREFIX) for line in lines]


def test_non_finite_markers_keep_the_whole_file_arrow_pass(tmp_path, monkeypatch):
    """The writer's "nan"/"inf" strings are mapped and the file read in one Arrow pass — not line
    chunks (same columns, much slower) — whatever buffer type the bytes come in."""
    run = write_run(tmp_path / "run", SynthSpec(world_size=1, steps=150))
    raw = records.rank_file(run, 0).read_bytes()
    raw = raw.replace(b'"grad_sq_local":[null,', b'"grad_sq_local":["nan",', 20)
    assert raw.count(b'"nan"') == 20
    chunks = []
    monkeypatch.setattr(rankfile.scan, "_lines_table", lambda *a: chunks.append(a) or None)
    data, table = rankfile.parse_rank_bytes(raw, 0, rankfile.Problems())
    assert chunks == [] and table.num_rows == 150
    assert np.isnan(rankfile.to_columns(table, 0).grad_sq_local[:40:2]).all()
