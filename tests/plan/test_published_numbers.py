"""The planner against published figures: the ZeRO paper's 7.5B example and Llama 2's GPU-hours."""

from __future__ import annotations

import pytest

from ddp_doctor.plan.hardware import get_gpu
from ddp_doctor.plan.memory import model_states, zero_paper_states
from ddp_doctor.plan.throughput import DEFAULT_MFU, flops_per_token
from ddp_doctor.presets import PRESETS

# Rajbhandari et al. 2020, Fig. 1: Ψ = 7.5B, N_d = 64, K = 12; per-GPU model-state memory in GB.
ZERO_PSI = 7.5e9
ZERO_ND = 64
ZERO_FIG1_GB = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
# The figure prints one decimal.
FIG1_ROUNDING_GB = 0.05

# Touvron et al. 2023 (Llama 2), Table 2: 7B pretraining took 184,320 A100-80GB GPU-hours for
# 2.0T tokens of 4096-token sequences.
LLAMA2_7B_GPU_HOURS = 184_320
LLAMA2_TOKENS = 2.0e12
LLAMA2_SEQ = 4096
# How far the default MFU may sit from the MFU implied by Llama 2's numbers.
MFU_TOLERANCE = 0.10


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_zero_paper_fig1_per_gpu_memory_is_reproduced(stage: int) -> None:
    assert zero_paper_states(ZERO_PSI, ZERO_ND, stage) / 1e9 == pytest.approx(
        ZERO_FIG1_GB[stage], abs=FIG1_ROUNDING_GB
    )


@pytest.mark.parametrize("strategy,stage", [("zero1", 1), ("zero2", 2), ("zero3", 3)])
def test_planner_deepspeed_strategies_match_the_zero_paper(strategy: str, stage: int) -> None:
    states = model_states(0, int(ZERO_PSI), 0, strategy, "fp16", world=ZERO_ND)
    assert states.total == pytest.approx(zero_paper_states(ZERO_PSI, ZERO_ND, stage))


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_ddp_and_fsdp_keep_sixteen_bytes_per_parameter_like_the_paper_baseline(strategy: str) -> None:
    world = 1 if strategy == "ddp" else ZERO_ND
    states = model_states(0, int(ZERO_PSI), 0, strategy, "bf16", world=world)
    assert states.total * world == pytest.approx(16 * ZERO_PSI)


def test_default_mfu_is_close_to_the_mfu_implied_by_llama2_7b_gpu_hours() -> None:
    a100 = get_gpu("a100-80gb")
    achieved = LLAMA2_TOKENS * flops_per_token(PRESETS["llama-7b"], LLAMA2_SEQ, False, False)
    implied = achieved / (LLAMA2_7B_GPU_HOURS * 3600 * a100.peak_flops("bf16"))
    assert implied == pytest.approx(DEFAULT_MFU, abs=MFU_TOLERANCE)
