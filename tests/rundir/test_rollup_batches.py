"""Ranks read together give what each rank read alone gives (rundir/rollup_read.py's batches).

The rollup path parses many ranks' index lines in one Arrow call (``_index_batch``), converts many
ranks' windows in one pass (``_read_windows_batch``, ``rankfile.to_columns_many``) and reduces
every rank's windows at once (``reduce``). Each must
equal the one-rank path exactly — arrays bit for bit, with their dtypes, the problems and notes in
the same words — whatever is wrong with some of the ranks in the batch: a line Arrow refuses (the
batch is split), a non-finite string (that rank parsed alone), a damaged index, an empty file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.rundir import records, rollup_index, rollup_read, summarize
from ddp_doctor.rundir.rankfile import Problems, parse_rank_bytes, read_regular, to_columns
from ddp_doctor.rundir.rankfile.columns import to_columns_many
from ddp_doctor.rundir.rollup_index import LOSS_SPIKE


def _same(a: Any, b: Any, where: str = "") -> None:
    """Equal exactly: arrays by dtype, shape and bytes (and both constant views or neither)."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert a.tobytes() == b.tobytes(), where
        assert len(a) == 0 or (a.strides == (0,)) == (b.strides == (0,)), where
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k}]")
    elif isinstance(a, (list, tuple)) and not isinstance(a, str):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, pa.Table):
        assert a.equals(b), where
    else:
        assert a == b, where


@pytest.fixture
def run6(tmp_path: Path) -> Path:
    run = write_run(
        tmp_path / "run", SynthSpec(world_size=6, steps=300, faults=("loss-spike", "sampler-missing"))
    )
    summarize.summarize(run, None, every=10)
    return run


def _edit_index(run: Path, rank: int, line: int, fn: Any) -> None:
    path = rollup_index.index_path(run, rank)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[line] = fn(lines[line])
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    "damage", ["none", "garbage", "nan", "other rank", "missing", "header only", "no kind"]
)
def test_index_batch_equals_each_rank_alone(run6: Path, damage: str) -> None:
    if damage == "garbage":  # Arrow refuses the batch: it is split down to the rank
        _edit_index(run6, 2, 4, lambda b: b[:30] + b"#" + b[31:])
    elif damage == "nan":  # a non-finite string: the batch is refused, that rank parsed alone (mapped)
        _edit_index(run6, 3, 5, lambda b: b.replace(b'"lr":[', b'"lr":["nan",', 1))
    elif damage == "other rank":
        _edit_index(run6, 1, 3, lambda b: b.replace(b'"rank":1', b'"rank":4', 1))
    elif damage == "missing":
        rollup_index.index_path(run6, 4).unlink()
    elif damage == "header only":
        path = rollup_index.index_path(run6, 5)
        path.write_bytes(path.read_bytes().splitlines(keepends=True)[0])
    elif damage == "no kind":  # a null kind is skipped by the check (pc.all's rule), as alone
        _edit_index(run6, 0, 2, lambda b: b.replace(b'"kind":"rollup"', b'"kind":null', 1))
    items = [(str(run6), str(records.rank_file(run6, r)), r, None) for r in range(6)]
    alone = [rollup_read._index_arrays(i) for i in items]
    together = rollup_read._index_batch(items)
    _same(alone, together)
    usable = sum(isinstance(x, rollup_read.RankWindows) for x in alone)
    assert usable == (5 if damage in ("garbage", "other rank", "missing") else 6)


def _hostile_file(src: bytes, seed: int, hash_len: int) -> bytes:
    """A rank file with damaged step records: negative and impossible micro-step counts, longer
    input hashes, autocast, null clip entries, non-finite losses, non-finite notes."""
    rng = random.Random(seed)
    out = []
    for line in src.splitlines(keepends=True):
        if line.startswith(b'{"kind":"step"') and rng.random() < 0.25:
            rec = json.loads(line)
            c = rng.randrange(6)
            if c == 0:
                rec["micro_steps"] = rng.choice([-1, 1000])
            elif c == 1:
                rec["input_hashes"] = ["ab" * hash_len, None]
            elif c == 2:
                rec["autocast"] = rng.choice(["bf16", "fp16"])
            elif c == 3:
                rec["clip"] = [None, {"max_norm": 1.0, "total_norm": 2.0}]
            elif c == 4:
                rec["losses"] = [1.0, 2.0, 3.0]
            else:
                rec["nonfinite"] = {"where": "loss", "micro": 0}
            line = json.dumps(rec, separators=(",", ":")).encode() + b"\n"
        out.append(line)
    return b"".join(out)


def _files(run: Path) -> list[bytes]:
    clean = [read_regular(records.rank_file(run, r)) for r in range(3)]
    nan = clean[1].replace(b'"losses":[', b'"losses":["nan",', 3)  # non-finite strings: parsed alone
    wrong = clean[2].replace(b'"zero_grad":1', b'"zero_grad":"x"', 2)  # a wrong type: the batch is split
    corrupt = clean[0].replace(b'{"kind":"step","step":7,', b'{"kind":"step","step":7,#', 1)
    truncated = clean[1][:-200]
    empty = clean[0].split(b'{"kind":"step"', 1)[0]
    hostile = [_hostile_file(clean[i % 3], i, 8 + 5 * i) for i in range(3)]
    return [clean[0], nan, *hostile, wrong, corrupt, truncated, empty, clean[2]]


def test_windows_batch_equals_each_rank_alone(run6: Path) -> None:
    # rank 1: a corrupt step line in a window read raw (its count no longer matches: read whole);
    # rank 3: non-finite strings; rank 4: a wrong type; the others clean
    for rank, fn in (
        (1, lambda b: b.replace(b'{"kind":"step","step":3,', b'{"kind":"step","step":3,#', 1)),
        (3, lambda b: b.replace(b'"losses":[', b'"losses":["nan",', 3)),
        (4, lambda b: b.replace(b'"zero_grad":1', b'"zero_grad":"x"', 2)),
    ):
        path = records.rank_file(run6, rank)
        with open(path, "r+b") as fh:  # the same inode: the index still describes the file
            data = fn(fh.read())
            fh.seek(0)
            fh.write(data)
            fh.truncate()
    named = [(records.rank_file(run6, r), r) for r in range(6)]
    ok, every, _ = rollup_read._index_all(run6, named, 1)
    red = rollup_read.reduce(ok)
    selected = rollup_read.select(red)
    part = rollup_read.parts(selected, every, rollup_read.sample_heads(red.windows, every, 8))
    items = [
        (str(records.rank_file(run6, x.rank)), x.rank, x, sorted(selected), part, None, None) for x in ok
    ]
    alone = [rollup_read._read_windows(i) for i in items]
    together = rollup_read._read_windows_batch(items)
    for x, y in zip(alone, together):
        _same(x[:1] + x[3:], y[:1] + y[3:])
        _same(x[2].all, y[2].all)
        _same(x[1], y[1])
    notes = " ".join(str(x[3]) + " ".join(x[2].all) for x in together)
    assert "rank 1: window" in notes and "wrong type" in notes


def test_to_columns_many_equals_each_table_alone(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "run", SynthSpec(world_size=3, steps=200, faults=("nonfinite", "fp16-overflow"))
    )
    tables = [parse_rank_bytes(raw, r, Problems())[1] for r, raw in enumerate(_files(run))]
    probs_alone = [Problems() for _ in tables]
    alone = [to_columns(t, r, p) for r, (t, p) in enumerate(zip(tables, probs_alone))]
    probs = [Problems() for _ in tables]
    together = to_columns_many([(t, r, p) for r, (t, p) in enumerate(zip(tables, probs))])
    _same(alone, together)
    _same([p.all for p in probs_alone], [p.all for p in probs])
    assert any("negative micro_steps" in " ".join(p.all) for p in probs)
    widths = {c.input_hashes.dtype.itemsize for c in together}
    assert len(widths) > 1  # each table's hashes as wide as its own longest


def _reduce_rank_by_rank(ranks: list[rollup_read.RankWindows]) -> rollup_read.Reduced:
    """The reduce as a loop over the ranks in rank order (its definition; the code does it at once)."""
    red = rollup_read.reduce([])
    every = ranks[0].every
    W = max(max(int(r.window[-1]) + 1, math.ceil((r.last[-1] + 1) / every)) for r in ranks if len(r.window))
    red = dataclasses.replace(
        red,
        every=every,
        windows=W,
        **{k: np.zeros(W, dtype=np.int64) for k in ("flags", "ranks", "window_steps", "loss_marks")},
        **{k: np.zeros(W, dtype=np.int64) for k in ("digest_ranks", "digest_same")},
        **{k: np.zeros(W) for k in ("excess", "excess_n", "within", "within_n")},
        **{k: np.zeros((W, 6)) for k in ("loss", "gsq", "gsql", "samples")},
        lr_max=np.full(W, np.nan),
        last_window={},
        marks=np.full((W, 4), -1, dtype=np.int64),
    )
    for m in (red.loss, red.gsq, red.gsql, red.samples):
        m[:, 4:] = np.nan
    lowest = np.zeros(W, dtype=np.uint64)
    for r in ranks:  # spike marks: the earliest first and the latest last of any rank
        for i, win in enumerate(r.window.tolist()):
            for j in (0, 2):
                lo, hi = int(r.marks[i, j]), int(r.marks[i, j + 1])
                if lo >= 0:
                    old = red.marks[win, j : j + 2].tolist()
                    red.marks[win, j] = lo if old[0] < 0 else min(old[0], lo)
                    red.marks[win, j + 1] = max(old[1], hi)
    for r in sorted(ranks, key=lambda x: x.rank):
        w = r.window
        red.last_window[r.rank] = int(w[-1])
        np.bitwise_or.at(red.flags, w, r.flags & ~LOSS_SPIKE)
        np.add.at(red.ranks, w, 1)
        np.maximum.at(red.window_steps, w, r.steps)
        np.add.at(red.loss_marks, w, ((r.flags & LOSS_SPIKE) != 0).astype(np.int64))
        for name in ("loss", "gsq", "gsql", "samples"):
            rollup_read._merge_stat(getattr(red, name), getattr(r, name), w)
        np.fmax.at(red.lr_max, w, r.lr[:, 1])
        with np.errstate(invalid="ignore", divide="ignore"):
            n_ok = r.loss[:, 0] - r.loss[:, 1]
            mean = r.loss[:, 2] / n_ok
            ss = r.loss[:, 3] - n_ok * mean * mean
        ex = r.loss[:, 5] - mean
        ok = np.isfinite(ex)
        np.add.at(red.excess, w[ok], ex[ok])
        np.add.at(red.excess_n, w[ok], 1)
        ok = np.isfinite(ss) & (n_ok > 1)
        np.add.at(red.within, w[ok], np.maximum(ss[ok], 0.0))
        np.add.at(red.within_n, w[ok], n_ok[ok] - 1)
        has = r.digest != 0
        first_here = has & (lowest[w] == 0)
        lowest[w[first_here]] = r.digest[first_here]
        np.add.at(red.digest_ranks, w[has], 1)
        np.add.at(red.digest_same, w[has], (r.digest[has] == lowest[w[has]]).astype(np.int64))
    return red


def test_reduce_sums_in_rank_order_whatever_the_order_given(run6: Path) -> None:
    named = [(records.rank_file(run6, r), r) for r in range(6)]
    ok, _, _ = rollup_read._index_all(run6, named, 1)
    many = []
    for k in range(8):  # 48 ranks: some without a digest in every other window, a shorter one
        for x in ok:
            y = dataclasses.replace(x, rank=x.rank + 6 * k)
            if k % 3 == 1:
                y.digest = np.where(np.arange(len(y.digest)) % 2 == 0, y.digest, 0).astype(np.uint64)
            if k == 5:
                y = rollup_read._trim_open_window(
                    dataclasses.replace(y, last=y.last - (y.last == y.last[-1]))
                )
            many.append(y)
    random.Random(0).shuffle(many)
    _same(_reduce_rank_by_rank(many), rollup_read.reduce(many))
