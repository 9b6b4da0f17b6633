"""The logged loss is captured from every source a script uses, in a real probed process."""

from __future__ import annotations

import math
import re
import sys

from probe.helpers import SCRIPTS, kind, read_rank, run_probe


def test_every_installed_logging_library_and_both_streams_are_captured_unchanged(tmp_path):
    proc = run_probe(tmp_path / "run", [sys.executable, str(SCRIPTS / "log_sources.py")])
    printed = re.findall(r"^step (\d+) loss ([0-9.]+)$", proc.stdout, flags=re.M)
    assert [int(s) for s, _ in printed] == list(range(5))  # what the user sees is untouched
    sources = proc.stdout.split("SOURCES ", 1)[1].split()[0].split(",")
    records = read_rank(tmp_path / "run", 0)
    assert not kind(records, "probe_error")
    logged = kind(records, "logged_loss")
    for source in sources:
        mine = [r for r in logged if r["source"] == source and r["key"] in ("loss", "train/loss")][:5]
        assert len(mine) == 5, source
        for (step, text), rec in zip(printed, mine):
            # logged right after optimizer.step() of step `step`: window step + 1, no micro-step yet
            assert (rec["step"], rec["micro"], rec["rank"]) == (int(step) + 1, 0, 0), (source, rec)
            assert math.isclose(rec["value"], float(text), abs_tol=rec["resolution"] + 5e-7), (source, rec)
    assert {"stdout", "stderr", "accelerate"} <= set(sources)
