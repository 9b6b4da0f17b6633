"""GPU readiness (bench/gpu_check.py): on a CUDA machine with NCCL, the probe keeps training
bit-identical in fp32, bf16 autocast, fp16 autocast with GradScaler and compiled with inductor,
and the summary holds the overhead ratios. Without CUDA the `gpu` tests are skipped (conftest),
and the script itself says so in its JSON instead of failing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GPU_CHECK = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"


def _gpu_check(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run(
        [sys.executable, str(GPU_CHECK), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    summary = json.loads(out.read_text())
    assert proc.returncode == 0, (proc.stdout[-3000:], json.dumps(summary)[:3000])
    return summary


def test_without_a_gpu_the_check_says_why_it_skipped(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the gpu tests below run instead")
    summary = _gpu_check(tmp_path)
    assert summary == {"skipped": "no CUDA device (torch.cuda.is_available() is False)"}


@pytest.mark.gpu
@pytest.mark.distributed
def test_probe_is_bit_identical_on_cuda_with_amp_scaler_and_inductor(tmp_path):
    summary = _gpu_check(tmp_path, "--steps", "20", "--warmup", "5", "--repeats", "1")
    assert "skipped" not in summary, summary
    assert summary["fidelity_ok"], json.dumps(summary["configs"], indent=1)[:4000]
    for config, result in summary["configs"].items():
        assert result["bare_repeatable"], config  # else bare-vs-probed equality would mean nothing
        for level, cell in result["levels"].items():
            assert cell["ratio"] is not None and cell["max_allocated_probed"], (config, level)
