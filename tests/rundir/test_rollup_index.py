"""The rollup index (rundir/rollup_index.py): each line's bytes are its window's in the rank file.

`assert_index_describes` is the check every writer of an index must pass (the probe's, in
tests/probe/test_rollup.py and the fidelity cell, and `summarize`'s, here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.rundir import records, rollup_index, summarize

STEP = records.line_prefix("step")
ROLLUP = records.line_prefix("rollup")


def assert_index_describes(run: Path, rank: int) -> list[dict[str, Any]]:
    """The index of ``rank`` is current and true to its rank file: header inode, windows in order,
    each window's bytes holding exactly its steps (count, first, last), its `others` exactly its
    lines that are neither steps nor rollups, the windows back to back from byte 0."""
    path = records.rank_file(run, rank)
    data = path.read_bytes()
    index, why = rollup_index.read_index(run, rank, path.stat())
    assert index is not None, why
    start = 0
    for e in index.entries:
        a, b = e["at"]
        assert a == start and data[b - 1 : b] == b"\n"
        chunk = data[a:b]
        lines, at = [], a
        for line in chunk.splitlines(keepends=True):
            lines.append((at, at + len(line), line))
            at += len(line)
        steps = [json.loads(line)["step"] for _, _, line in lines if line.startswith(STEP)]
        assert len(steps) == e["steps"] and min(steps) == e["first"] and max(steps) == e["last"], e["window"]
        others = [[x, y] for x, y, line in lines if not line.startswith((STEP, ROLLUP))]
        merged: list[list[int]] = []
        for x, y in others:
            if merged and merged[-1][1] == x:
                merged[-1][1] = y
            else:
                merged.append([x, y])
        assert e["others"] == merged, e["window"]
        start = b
    return index.entries


def test_summarize_writes_an_index_true_to_the_rank_file(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=230, faults=("nonfinite",)))
    summarize.summarize(run, None, every=20)
    for rank in range(2):
        entries = assert_index_describes(run, rank)
        assert [e["steps"] for e in entries] == [20] * 11 + [10]
        flags = [e["screen"]["flags"] for e in entries]
        # the nonfinite fault: one non-finite record at step 230 // 2 on rank 1 (its window flagged)
        assert (flags[115 // 20] & rollup_index.NONFINITE) == (rollup_index.NONFINITE if rank == 1 else 0)
        # the index line puts the screen before the statistics (the report parses up to CUT only)
        line = rollup_index.index_path(run, rank).read_bytes().splitlines()[1]
        assert line.index(b'"screen"') < line.index(rollup_index.CUT) < line.index(b'"stats"')
