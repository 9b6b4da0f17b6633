"""The reader keeps every readable record and names each kind of damage."""

from __future__ import annotations

import json
import math

import pytest
from fixtures.synth_run import damage

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.rundir.reader import RunDirError, read_run


def test_missing_directory_is_an_input_error(tmp_path):
    with pytest.raises(RunDirError, match="no such directory"):
        read_run(tmp_path / "nope")


def test_empty_directory_is_not_a_run(tmp_path):
    with pytest.raises(RunDirError, match="not a ddp-doctor run directory"):
        read_run(tmp_path)


def test_manifest_without_rank_files_says_so(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": "ddp-doctor.run/1"}))
    with pytest.raises(RunDirError, match="no rank data"):
        read_run(tmp_path)


def test_clean_run_reads_without_problems(make_run):
    run = read_run(make_run(steps=60))
    assert run.problems == []
    assert sorted(run.ranks) == [0, 1]
    assert len(run.ranks[0].steps) == 60
    assert not run.in_progress


def test_truncated_last_line_is_reported_and_the_rest_kept(make_run):
    path = make_run(steps=60)
    damage(path, truncate_rank=1)
    run = read_run(path)
    assert any("rank 1: last line is truncated" in p for p in run.problems)
    assert len(run.ranks[1].steps) >= 59


def test_corrupt_line_is_reported_with_its_line_number(make_run):
    path = make_run(steps=60)
    damage(path, corrupt_rank=0)
    run = read_run(path)
    assert any("rank 0: 1 corrupt line(s) skipped" in p and "line 11" in p for p in run.problems)


def test_missing_rank_is_reported_and_analysis_still_runs(make_run):
    path = make_run(world_size=3, steps=80)
    damage(path, drop_rank=2)
    diag = diagnose(path)
    assert diag.run_info["missing_ranks"] == [2]
    assert any("missing for rank(s) 2 of world size 3" in p for p in diag.run_info["problems"])
    assert diag.run_info["effective_batch"]["estimated"] is True


def test_run_in_progress_is_reported(make_run):
    path = make_run(steps=60, ended=False)
    damage(path, drop_end=True)
    diag = diagnose(path)
    assert diag.run_info["in_progress"] is True
    assert any("still in progress" in p for p in diag.run_info["problems"])
    # an in-progress run is not "uneven" just because the ranks have no end record
    assert {f.id: f.status for f in diag.findings}["accum-uneven"] == "ruled-out"


def test_nan_strings_become_nan_and_are_found(make_run):
    path = make_run(steps=80, faults=("nonfinite",))
    run = read_run(path)
    assert any(math.isnan(x) for x in run.ranks[1].steps.losses)
    f = {f.id: f for f in diagnose(path).findings}["nonfinite"]
    assert (f.evidence["first_step"], f.evidence["rank"]) == (40, 1)


def test_unknown_record_kinds_and_fields_are_ignored(make_run):
    path = make_run(steps=30)
    with open(path / "ranks" / "rank-00000.jsonl", "a") as fh:
        fh.write(json.dumps({"kind": "future-thing", "x": 1}) + "\n")
    run = read_run(path)
    assert run.ranks[0].unknown_kinds == 1
    assert run.problems == []


def test_column_cache_gives_the_same_data_and_follows_file_changes(make_run, monkeypatch):
    import numpy as np

    import ddp_doctor.rundir.rankfile as rankfile
    import ddp_doctor.rundir.reader as rundir

    monkeypatch.setattr(rankfile.cache, "CACHE_MIN_BYTES", 1)
    path = make_run(steps=80, faults=("nonfinite", "fp16-overflow"))
    cold = read_run(path)
    assert (path / rundir.CACHE_DIR / "rank-00000.arrow").exists()
    warm = read_run(path)
    for r in cold.ranks:
        a, b = cold.ranks[r], warm.ranks[r]
        for k in ("losses", "fn_value", "grad_sq_local", "tokens", "scale", "sync", "skipped"):
            assert np.array_equal(getattr(a.steps, k), getattr(b.steps, k), equal_nan=True), k
        assert np.array_equal(a.steps.input_hashes, b.steps.input_hashes)
        assert np.array_equal(a.steps.clip, b.steps.clip, equal_nan=True)
        assert np.array_equal(a.steps.clip_step, b.steps.clip_step)
        assert a.steps.nonfinite == b.steps.nonfinite
        assert (a.configs, a.replica, a.header, a.end) == (b.configs, b.replica, b.header, b.end)
    # the file grows (a run in progress): the cache is stale and the new line is read
    with open(path / "ranks" / "rank-00000.jsonl", "a") as fh:
        fh.write("not json\n")
    again = read_run(path)
    assert any("corrupt line" in p for p in again.problems)


def test_fast_chunked_and_per_line_paths_give_the_same_columns(make_run, monkeypatch):
    """Arrow on the whole file, Arrow per chunk (a damaged line elsewhere) and json.loads per line
    (another writer's spacing) must agree value for value, non-finite strings included."""
    import dataclasses

    import numpy as np

    import ddp_doctor.rundir.rankfile as rankfile
    from ddp_doctor.rundir import records

    monkeypatch.setattr(rankfile.scan, "CHUNK_LINES", 16)
    path = make_run(steps=80, faults=("nonfinite", "fp16-overflow", "grad-spike"))
    fast = read_run(path, use_cache=False).ranks[1]
    lines = records.rank_file(path, 1).read_text().splitlines(keepends=True)
    damaged = [*lines[:30], "not json\n", *lines[30:]]
    records.rank_file(path, 1).write_text("".join(damaged))
    chunked = read_run(path, use_cache=False).ranks[1]
    spaced = "".join(json.dumps(json.loads(ln)) + "\n" for ln in lines)
    records.rank_file(path, 1).write_text(spaced)
    slow = read_run(path, use_cache=False).ranks[1]
    assert fast.steps.loss_nonfinite.any()
    for other in (chunked, slow):
        for f in dataclasses.fields(fast.steps):
            a, b = getattr(fast.steps, f.name), getattr(other.steps, f.name)
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f.name
            elif isinstance(a, dict):  # `extra`: declared numeric step fields (e.g. grad_norm) as arrays
                assert a.keys() == b.keys(), f.name
                assert all(np.array_equal(a[k], b[k], equal_nan=True) for k in a), f.name
            else:
                assert a == b, f.name
        assert (fast.configs, fast.replica, fast.header, fast.end) == (
            other.configs,
            other.replica,
            other.header,
            other.end,
        )


def test_a_step_field_declared_in_records_is_written_read_and_cached(tmp_path, monkeypatch):
    """Adding a field is one line in rundir/records.py: the writer's check accepts it, the reader turns a
    numeric one into a column (StepColumns.extra), the cache keeps it."""
    import numpy as np

    import ddp_doctor.rundir.rankfile as rankfile
    from ddp_doctor.rundir import records

    extra = (records.F("update_ratio", "float", "step"), records.F("logged_loss", "list[float]", "micro"))
    monkeypatch.setitem(records.KINDS, "step", records.KINDS["step"] + extra)
    monkeypatch.setattr(rankfile.cache, "CACHE_MIN_BYTES", 1)
    lines = [records.record("header", schema=records.RANK_SCHEMA, rank=0, world_size=1)]
    for s in range(3):
        lines.append(
            records.record(
                "step", step=s, micro_steps=2, losses=[1.0, 2.0], update_ratio=0.1 * s, logged_loss=[s, "nan"]
            )
        )
    records.rank_file(tmp_path, 0).parent.mkdir(parents=True)
    records.rank_file(tmp_path, 0).write_bytes(b"".join(records.encode(r) for r in lines))
    for _ in ("cold", "warm"):
        cols = read_run(tmp_path).ranks[0].steps
        assert np.allclose(cols.extra["update_ratio"], [0.0, 0.1, 0.2])
        assert np.array_equal(cols.extra["logged_loss"], [0, np.nan, 1, np.nan, 2, np.nan], equal_nan=True)
    with pytest.raises(KeyError, match="declares no field"):
        records.record("step", step=0, not_declared=1)
