"""Write synthetic run directories (docs/run-format.md) whose stability depends on interventions.

A stand-in for `ddp-doctor run` in the ablate tests: the "training" is a decaying loss plus noise
whose size follows the lr the interventions leave (lr.scale), with spikes that clipping removes;
seeds change the noise draw; adam.eps never takes effect. Fast and deterministic, so the ranking logic is tested exactly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ddp_doctor.rundir import records

STEPS = 60
NOISE = 0.2  # loss noise at lr.scale = 1


def write_run(run_dir: Path, sets: dict[str, str], exit_code: int = 0, world: int = 2) -> None:
    scale = float(sets.get("lr.scale", 1.0))
    clipped = "clip" in sets
    rng = np.random.default_rng(int(sets.get("seed", 0)))
    t = np.arange(STEPS)
    loss = 1.0 + 2.0 * np.exp(-t / 15) + NOISE * scale * rng.standard_normal(STEPS)
    grad = 1.0 + 0.05 * rng.standard_normal(STEPS)
    if not clipped and scale >= 1:
        for s in (25, 40, 55):
            loss[s] += 3.0
            grad[s] *= 20
    (run_dir / records.RANKS_DIR).mkdir(parents=True, exist_ok=True)
    for rank in range(world):
        lines = [records.record("header", schema=records.RANK_SCHEMA, rank=rank, world_size=world)]
        for s in range(STEPS):
            lines.append(
                records.record(
                    "step",
                    step=s,
                    micro_steps=1,
                    losses=[float(loss[s])],
                    samples=[2],
                    sync=[1],
                    grad_sq_local=[float(grad[s]) ** 2],
                    grad_sq_global=[float(grad[s]) ** 2],
                    lr=[min(1.0, (s + 1) / 5)],
                )
            )
        # adam.eps acts on nothing here (think: an SGD script); the probe counts 0 effects for it
        effects = {key: 0 if key == "adam.eps" else STEPS for key in sets}
        lines.append(records.record("end", steps=STEPS, reason="exit", interventions=effects))
        records.rank_file(run_dir, rank).write_bytes(b"".join(records.encode(rec) for rec in lines))
    manifest = {
        "schema": records.RUN_SCHEMA,
        "command": ["train.py"],
        "interventions": sets,
        "start": "2026-12-02T14:00:00Z",
        "end": "2026-12-02T14:01:00Z",
        "exit_code": exit_code,
    }
    records.manifest_path(run_dir).write_text(json.dumps(manifest))
    assert math.isfinite(float(loss.sum()))
