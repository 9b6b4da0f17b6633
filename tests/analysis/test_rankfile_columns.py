"""Constant columns are held as one value (rankfile.columns.compact) and read exactly like the full array."""

from __future__ import annotations

import dataclasses

import numpy as np

import ddp_doctor.rundir.rankfile as rankfile
from ddp_doctor.rundir.rankfile.columns import COMPACT_MIN, compact, constant
from ddp_doctor.rundir.reader import read_run


def test_constant_is_byte_for_byte():
    n = COMPACT_MIN
    assert constant(np.full(n, np.nan))
    assert constant(np.full(n, -1, dtype=np.int64))
    assert constant(np.zeros(n, dtype=bool))
    mixed_zero = np.zeros(n)
    mixed_zero[3] = -0.0  # equal as floats, different bits: not merged
    assert not constant(mixed_zero)
    other_nan = np.full(n, np.nan)
    other_nan[5] = np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), np.float64)[0]
    assert not constant(other_nan)
    assert not constant(np.full(n - 1, 1.0))  # too short to be worth a view
    assert not constant(np.full(n, b"x", dtype="S1"))


def _full(c: rankfile.StepColumns) -> dict[str, np.ndarray]:
    out = {f.name: np.array(getattr(c, f.name)) for f in dataclasses.fields(c) if f.name not in ("extra",)}
    return out | {f"extra.{k}": np.array(v) for k, v in c.extra.items()}


def _views(c: rankfile.StepColumns) -> list[str]:
    return [f.name for f in dataclasses.fields(c) if getattr(getattr(c, f.name), "strides", None) == (0,)]


def _same(a: rankfile.StepColumns, b: rankfile.StepColumns) -> None:
    fa, fb = _full(a), _full(b)
    assert fa.keys() == fb.keys()
    for k in fa:
        if isinstance(fa[k], np.ndarray) and fa[k].dtype != object:
            assert fa[k].dtype == fb[k].dtype and fa[k].shape == fb[k].shape, k
            assert fa[k].tobytes() == fb[k].tobytes(), k
        else:
            assert fa[k].tolist() == fb[k].tolist(), k


def test_parsed_and_cached_columns_are_compacted_and_equal(make_run, monkeypatch):
    monkeypatch.setattr(rankfile.cache, "CACHE_MIN_BYTES", 1)
    path = make_run(steps=200, faults=("nonfinite", "fp16-overflow"))
    file = path / "ranks" / "rank-00000.jsonl"
    data, _ = rankfile.parse_rank(file, 0)
    assert data.steps is not None
    views = _views(data.steps)
    assert "micro_steps" in views  # one micro-step count throughout
    # the same columns built without compaction, from the same table
    raw = rankfile.scan.read_regular(file)
    _, table = rankfile.parse_rank_bytes(raw, 0, rankfile.Problems())
    with monkeypatch.context() as m:
        m.setattr(rankfile.columns, "compact", lambda c: c)
        full = rankfile.to_columns(table, 0)
    assert not any(getattr(full, v).strides == (0,) for v in views)
    _same(data.steps, full)
    assert compact(full) is full and all(getattr(full, v).strides == (0,) for v in views)
    cold = read_run(path)
    warm = read_run(path)  # from the cache: the constant columns stored as one value, views again
    assert (path / ".ddp-doctor-cache" / "rank-00000.arrow").exists()
    for r in cold.ranks:
        _same(cold.ranks[r].steps, warm.ranks[r].steps)
        assert _views(warm.ranks[r].steps) == _views(cold.ranks[r].steps)
    assert set(views) <= set(_views(warm.ranks[0].steps))


def test_take_steps_of_constant_columns_equals_take_steps_of_full_arrays(make_run):
    """take_steps keeps a constant column as one value without taking it (what compact() would make
    of the taken array): the same columns, views where compaction makes them, as from full arrays."""
    path = make_run(steps=300, faults=("nonfinite", "fp16-overflow"))
    data, _ = rankfile.parse_rank(path / "ranks" / "rank-00000.jsonl", 0)
    c = data.steps
    assert c is not None and _views(c)
    full = dataclasses.replace(
        c,
        **{f.name: np.array(getattr(c, f.name)) for f in dataclasses.fields(c) if f.name in _views(c)},
        extra={k: np.array(v) for k, v in c.extra.items()},
    )
    assert not _views(full)
    rng = np.random.default_rng(0)
    for frac in (0.0, 0.1, 0.3, 1.0):  # fewer kept than COMPACT_MIN (full arrays) and more (views)
        keep = rng.random(len(c)) < frac
        got, want = rankfile.columns.take_steps(c, keep), rankfile.columns.take_steps(full, keep)
        _same(got, want)
        assert _views(got) == _views(want)
