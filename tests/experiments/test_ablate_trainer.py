"""ablate end to end on the reference trainer with the lr-too-high fault (slow: 6 probed runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ddp_doctor.experiments.ablate import ablate, parse_variants, probe_runner
from ddp_doctor.trainer.launch import free_port

pytestmark = pytest.mark.distributed  # starts process groups (gloo ranks)

# clip none: the trainer clips at 1.0 by default, which would leave the clip= variant nothing to do.
TRAINER = [
    "-m",
    "ddp_doctor.trainer",
    "--fault",
    "lr-too-high",
    "--clip",
    "none",
    "--steps",
    "30",
    "--accum",
    "2",
    "--seq-len",
    "64",
    "--no-progress",
]


def torchrun(command, run_dir: Path, sets: dict[str, str]) -> int:
    """probe_runner (`ddp-doctor run`, interventions in DDP_DOCTOR_SET) around 2 torchrun ranks on a free port."""
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
    ]
    return probe_runner([*launcher, *command], run_dir, sets)


@pytest.mark.slow
def test_lr_scale_ranks_first_against_lr_too_high(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    result = ablate(TRAINER, tmp_path, parse_variants(["clip=1.0", "lr.scale=0.1"]), seeds=2, runner=torchrun)
    baseline, best = result.variants[0], result.variants[1]
    assert [v.failed for v in result.variants] == [0, 0, 0]
    assert best.name == "lr.scale=0.1" and best.verdict == "helped"
    assert best.diffs["final_loss"].variant < best.diffs["final_loss"].baseline
    assert len(set(baseline.metrics["final_loss"])) == 2  # the seeds differ
