"""The rollup path's warm caches (rundir/rollup_cache.py): the index arrays of every rank and each
rank's selected windows, in RUN/.ddp-doctor-cache/.

A warm read must equal a read without caches — same windows, same steps, same values, same notes —
and must not parse what is cached; a rank file that grew or was replaced is read again; a damaged
index cache is read again with a note; a symlink in a cache file's place is never written through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.rundir import records, rollup_cache, rollup_read, summarize
from ddp_doctor.rundir.reader import RunData, read_run


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(rollup_cache, "CACHE_MIN_BYTES", 0)
    out = write_run(tmp_path / "run", SynthSpec(world_size=3, steps=600, faults=("loss-spike", "nonfinite")))
    summarize.summarize(out, None, every=10)
    return out


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """The ranks whose index (``index``) and windows (``windows``) were parsed, not taken from a cache."""
    seen: dict[str, list[int]] = {"index": [], "windows": []}
    index, windows = rollup_read._index_start, rollup_read._windows_start

    def counted_index(item: Any) -> Any:
        seen["index"].append(item[2])
        return index(item)

    def counted_windows(item: Any) -> Any:
        seen["windows"].append(item[1])
        return windows(item)

    monkeypatch.setattr(rollup_read, "_index_start", counted_index)
    monkeypatch.setattr(rollup_read, "_windows_start", counted_windows)
    return seen


def _uncached(run: Path, monkeypatch: pytest.MonkeyPatch) -> RunData:
    with monkeypatch.context() as m:
        m.setattr(rollup_cache, "CACHE_MIN_BYTES", 2**62)
        return read_run(run, rollups="on")


def _same(a: RunData, b: RunData, notes: bool = True) -> None:
    assert a.rollups is not None and b.rollups is not None
    assert a.rollups.selected == b.rollups.selected
    assert a.rollups.rank_steps == b.rollups.rank_steps
    if notes:
        assert a.problems == b.problems
    assert sorted(a.ranks) == sorted(b.ranks)
    for rank in a.ranks:
        x, y = a.ranks[rank].steps, b.ranks[rank].steps
        assert x is not None and y is not None
        assert np.array_equal(x.step, y.step)
        assert np.array_equal(x.losses, y.losses, equal_nan=True)
    for name in ("loss", "gsq", "samples"):
        assert np.array_equal(getattr(a.rollups, name), getattr(b.rollups, name), equal_nan=True)


def test_a_warm_read_equals_the_uncached_one_and_parses_nothing(
    run: Path, parsed: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _uncached(run, monkeypatch)
    parsed["index"].clear()
    parsed["windows"].clear()
    cold = read_run(run, rollups="on")
    assert sorted(parsed["index"]) == [0, 1, 2] and sorted(parsed["windows"]) == [0, 1, 2]
    cache = run / records.CACHE_DIR
    assert (cache / rollup_cache.INDEX_CACHE).is_file() and len(list(cache.glob("*.rollup-s*.arrow"))) == 3
    parsed["index"].clear()
    parsed["windows"].clear()
    warm = read_run(run, rollups="on")
    assert parsed == {"index": [], "windows": []}
    _same(base, cold)
    _same(base, warm)


def test_a_rank_file_that_grew_is_read_again(
    run: Path, parsed: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_run(run, rollups="on")
    with open(records.rank_file(run, 2), "ab") as fh:  # a run in progress: the probe appended
        fh.write(b'{"kind":"step","step":600,"ti')
    parsed["index"].clear()
    parsed["windows"].clear()
    warm = read_run(run, rollups="on")
    assert parsed["index"] == [2] and parsed["windows"] == [2]  # the others from the cache
    _same(_uncached(run, monkeypatch), warm)
    assert any("truncated" in p for p in warm.problems)


def test_a_replaced_rank_file_is_read_again(
    run: Path, parsed: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_run(run, rollups="on")
    path = records.rank_file(run, 0)
    copy = path.with_suffix(".new")
    copy.write_bytes(path.read_bytes())  # the same bytes under another inode: its index is stale
    copy.replace(path)
    parsed["index"].clear()
    warm = read_run(run, rollups="on")
    assert 0 in parsed["index"]
    assert any("stale" in p for p in warm.problems)
    _same(_uncached(run, monkeypatch), warm)


@pytest.mark.parametrize("damage", ["empty", "garbage", "flipped", "truncated", "symlink"])
def test_a_damaged_index_cache_is_read_again_with_a_note(
    run: Path, parsed: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch, damage: str, tmp_path: Path
) -> None:
    base = _uncached(run, monkeypatch)
    read_run(run, rollups="on")
    path = run / records.CACHE_DIR / rollup_cache.INDEX_CACHE
    data = path.read_bytes()
    victim = tmp_path / "victim"
    if damage == "symlink":
        victim.write_bytes(data)  # even a valid cache is not read through a symlink
        path.unlink()
        path.symlink_to(victim)
    else:
        cut = {"empty": b"", "garbage": b"\x00" * 100, "truncated": data[: len(data) // 2]}
        path.write_bytes(cut[damage] if damage in cut else data[:-9] + bytes([data[-9] ^ 1]) + data[-8:])
    parsed["index"].clear()
    warm = read_run(run, rollups="on")
    assert sorted(parsed["index"]) == [0, 1, 2]
    note = [p for p in warm.problems if "rollup index cache" in p]
    assert len(note) == 1 and "read again" in note[0]
    _same(base, warm, notes=False)
    assert [p for p in warm.problems if p not in note] == base.problems
    assert not path.is_symlink() and path.is_file()  # rewritten in its place
    if damage == "symlink":
        assert victim.read_bytes() == data
    parsed["index"].clear()
    again = read_run(run, rollups="on")
    assert parsed["index"] == [] and again.problems == base.problems


def test_damaged_windows_caches_are_read_again(
    run: Path, parsed: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base = _uncached(run, monkeypatch)
    read_run(run, rollups="on")
    files = sorted((run / records.CACHE_DIR).glob("*.rollup-s*.arrow"))
    files[0].write_bytes(b"not arrow")
    victim = tmp_path / "victim"
    victim.write_bytes(files[1].read_bytes())
    files[1].unlink()
    files[1].symlink_to(victim)
    parsed["windows"].clear()
    warm = read_run(run, rollups="on")
    assert sorted(parsed["windows"]) == [0, 1]
    _same(base, warm)
    assert victim.read_bytes() != b"" and not files[1].is_symlink()


def test_a_cache_directory_that_is_a_symlink_is_not_written(
    run: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / records.CACHE_DIR).symlink_to(elsewhere, target_is_directory=True)
    base = _uncached(run, monkeypatch)
    _same(base, read_run(run, rollups="on"))
    _same(base, read_run(run, rollups="on"))
    assert list(elsewhere.iterdir()) == []
