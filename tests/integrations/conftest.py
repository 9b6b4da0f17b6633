"""Logs written by the real libraries (HF Trainer, torch.utils.tensorboard, wandb offline).

Each fixture skips with the reason when its library is missing; CI installs them (`test` extra).
The HF run is shared by the module tests: one tiny-Llama Trainer run (30 steps, one CPU process)
writes trainer_state.json, TensorBoard events and, through DdpDoctorCallback, a probe run dir.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
HF_STEPS = 30


def need(module: str) -> None:
    pytest.importorskip(module, reason=f"{module} is not installed (pip install 'ddp-doctor[import]')")


def clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DDP_DOCTOR_", "WANDB_"))}
    env.update(
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DIR=str(tmp),
        WANDB_CACHE_DIR=str(tmp / "wandb-cache"),
        WANDB_CONFIG_DIR=str(tmp / "wandb-config"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        OMP_NUM_THREADS="1",
    )
    return env


@pytest.fixture(scope="session")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUT dir of a real HF Trainer run: trainer_state.json, runs/<run>/events…, ddp-doctor/ (callback)."""
    need("transformers")
    need("tensorboard")
    out = tmp_path_factory.mktemp("hf") / "out"
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "hf_tiny_llama.py"), str(out), "--steps", str(HF_STEPS)]
        + ["--callback", "--report-to", "tensorboard"],
        capture_output=True,
        text=True,
        env=clean_env(out.parent),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out
