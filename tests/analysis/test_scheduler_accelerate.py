"""scheduler-per-microstep under accelerate: AcceleratedScheduler steps the wrapped scheduler
num_processes times per optimizer step (split_batches=False), so with accumulation == world size
a correct loop must not be reported; per-micro-batch stepping under the wrapper still is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import diagnose

WORLD = ACCUM = 2


def _rewrite(run: Path, sched_steps: int, wrapper: dict | None) -> None:
    """Set every step's `sched_steps` and the scheduler config's wrapper fields on every rank."""
    for path in (run / "ranks").glob("rank-*.jsonl"):
        out = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("kind") == "step":
                rec["sched_steps"] = sched_steps
            elif rec.get("kind") == "config" and rec.get("what") == "scheduler" and wrapper:
                rec.update(wrapper)
            out.append(json.dumps(rec))
        path.write_text("\n".join(out) + "\n")


ACCELERATE = {"wrapper": "AcceleratedScheduler", "split_batches": False}


@pytest.mark.parametrize(
    ("sched_steps", "wrapper", "status"),
    [
        (WORLD, ACCELERATE, "ruled-out"),  # accelerate's design: num_processes steps, accum == world
        (ACCUM * WORLD, ACCELERATE, "confirmed"),  # per micro-batch through the wrapper's step loop
        (ACCUM, {**ACCELERATE, "split_batches": True}, "confirmed"),  # split_batches: one step per call
        (ACCUM, None, "confirmed"),  # plain loop: scheduler stepped once per micro-batch
        (1, None, "ruled-out"),
    ],
)
def test_scheduler_per_microstep_accelerate(
    tmp_path: Path, sched_steps: int, wrapper: dict | None, status: str
) -> None:
    run = write_run(tmp_path / "run", SynthSpec(world_size=WORLD, accum=ACCUM, steps=40))
    _rewrite(run, sched_steps, wrapper)
    f = next(f for f in diagnose(run).findings if f.id == "scheduler-per-microstep")
    assert f.status == status, f.summary
    if wrapper and not wrapper["split_batches"]:
        assert f.evidence["expected_per_optimizer_step"] == WORLD
