"""`ddp-doctor run` warns loudly when a rank never reported (issue 22: HF's run_clm.py left ranks/
empty and `run` said "(exit code 0)" with no warning)."""

from __future__ import annotations

import json
import sys

from ddp_doctor.launch.unreported import unreported_note
from probe.helpers import run_probe


def _rank_file(run, rank, first_line):
    (run / "ranks").mkdir(parents=True, exist_ok=True)
    (run / "ranks" / f"rank-{rank:05d}.jsonl").write_bytes(first_line + b"\n")


def _header(rank, world):
    return json.dumps({"kind": "header", "rank": rank, "world_size": world}).encode()


def test_no_rank_file_fewer_than_the_world_size_and_all_present(tmp_path):
    assert "no rank reported" in unreported_note(tmp_path)  # not even ranks/
    _rank_file(tmp_path, 0, _header(0, 3))
    _rank_file(tmp_path, 2, _header(2, 3))
    assert "only 2 of 3 ranks reported" in unreported_note(tmp_path)
    _rank_file(tmp_path, 1, b"\x00garbage" * 10_000)  # a damaged file still counts as a report
    assert unreported_note(tmp_path) is None


def test_run_prints_the_warning_and_keeps_it_in_the_manifest(tmp_path):
    proc = run_probe(tmp_path / "run", [sys.executable, "-c", "print('no training here')"])
    assert "WARNING: no rank reported" in proc.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["ranks"] == 0 and "no rank reported" in manifest["unreported"]
