"""fp16-overflow on short runs: the GradScaler's start-up back-off ends at the first good step, and a
run where every step was skipped is an overflow (found on the real trainer's fp16-overflow fault:
12 of 12 steps skipped were once reported as ruled out, since only steps after 20 counted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import diagnose

STEPS = 12


def _with_skips(run: Path, skipped: set[int]) -> Path:
    for path in (run / "ranks").glob("rank-*.jsonl"):
        out = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("kind") == "step":
                rec["skipped"] = rec["found_inf"] = rec["step"] in skipped
            out.append(json.dumps(rec))
        path.write_text("\n".join(out) + "\n")
    return run


@pytest.mark.parametrize(
    ("skipped", "status"),
    [
        (set(range(STEPS)), "confirmed"),  # never a good step: the model never trained
        ({0, 1, 2}, "ruled-out"),  # the usual start-up back-off, then good steps
        ({0, 1, 2, 5, 7, 9}, "confirmed"),  # skips keep coming after the first good step
        ({0, 1}, "ruled-out"),
    ],
)
def test_fp16_overflow_on_a_short_run(tmp_path: Path, skipped: set[int], status: str) -> None:
    run = _with_skips(write_run(tmp_path / "run", SynthSpec(steps=STEPS, fp16=True)), skipped)
    f = next(f for f in diagnose(run).findings if f.id == "fp16-overflow")
    assert f.status == status, f.summary
