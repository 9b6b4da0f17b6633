"""The runtime compile check records compiled-vs-eager differences at level full (slow: compiles)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = Path(__file__).with_name("scenario_compile_check.py")


@pytest.mark.slow
def test_compile_check_records_each_step_with_an_eager_baseline(tmp_path):
    run = tmp_path / "run"
    subprocess.run([sys.executable, str(SCENARIO), str(run)], check=True, timeout=600, capture_output=True)
    records = [
        json.loads(line) for f in (run / "ranks").glob("*.jsonl") for line in f.read_text().splitlines()
    ]
    checks = [r for r in records if r["kind"] == "compile_check"]
    errors = [r for r in records if r["kind"] == "probe_error"]
    assert errors == []
    assert [c["step"] for c in checks] == [0, 1, 2]
    for c in checks:
        assert c["baseline_abs"] == 0.0  # no dropout: eager is reproducible
        assert c["max_rel"] < 1e-4  # compiled MLP agrees with eager to fp32 reordering
