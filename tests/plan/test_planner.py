"""The planner on the forum case (LLaMA-13B on 4 × V100 32 GB) and on the rules it applies."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES
from ddp_doctor.plan import advice
from ddp_doctor.plan.hardware import get_gpu, gpu_table
from ddp_doctor.plan.planner import Setup, memory_breakdown, micro_and_accum, plan, plan_strategy
from ddp_doctor.plan.throughput import comm_bytes_per_step, flops_per_token
from ddp_doctor.presets import PRESETS

FORUM = Setup(
    model=PRESETS["llama-13b"],
    gpu=get_gpu("v100-32gb"),
    gpus_per_node=4,
    seq_len=2048,
    precision="fp16",
    global_batch=64,
)


def test_forum_case_ddp_needs_about_16_bytes_per_parameter_and_does_not_fit() -> None:
    ddp = plan_strategy(FORUM, "ddp")
    states = ddp.memory.weights + ddp.memory.grads + ddp.memory.optimizer
    assert states == pytest.approx(16 * PRESETS["llama-13b"].num_parameters(), rel=1e-6)
    assert states / 1e9 == pytest.approx(208, abs=1)  # the "≈ 208 GB per replica"
    assert not ddp.fits and ddp.max_micro_batch == 0


def test_forum_case_nothing_fits_without_offload_or_lora_and_alternatives_say_what_would() -> None:
    plans = plan(FORUM)
    assert not any(p.fits for p in plans)
    alternatives = {a.flags: a.fits for a in advice.alternatives(FORUM, plans)}
    assert "zero3" in alternatives["--checkpointing --offload"]
    assert "ddp" not in alternatives["--checkpointing --offload"]  # DDP cannot offload
    codes = {w.code for w in advice.warnings(FORUM, plans)}
    assert {"nothing-fits", "ddp-states"} <= codes


def test_v100_without_precision_plans_fp16_and_points_at_the_precision_hypothesis() -> None:
    precision, warned = advice.resolve_precision(None, gpu_bf16=False, gpu_name="v100-32gb")
    assert precision == "fp16" and warned[0].code == "no-bf16"
    applies = {a.hypothesis: a.findings for a in advice.applicable_hypotheses(FORUM, plan(FORUM))}
    assert "fp16-overflow" in applies["precision"]
    assert "accum-loss-unscaled" in applies["accumulation-sync"]  # 16 micro-steps per step


def test_bf16_requested_on_v100_is_an_error_and_becomes_fp16() -> None:
    precision, warned = advice.resolve_precision("bf16", gpu_bf16=False, gpu_name="v100-32gb")
    assert precision == "fp16" and warned[0].severity == "error"
    assert advice.resolve_precision(None, gpu_bf16=True, gpu_name="a100-80gb") == ("bf16", [])


def test_every_hypothesis_and_finding_named_by_the_plan_is_in_the_catalog() -> None:
    multi_node = replace(FORUM, nodes=2, checkpointing=True, offload=True)
    for applies in advice.applicable_hypotheses(multi_node, plan(multi_node)):
        assert applies.hypothesis is None or applies.hypothesis in HYPOTHESES
        assert all(f in FINDINGS for f in applies.findings)


def test_largest_micro_batch_fits_and_one_more_does_not() -> None:
    setup = Setup(model=PRESETS["llama-7b"], gpu=get_gpu("a100-80gb"), gpus_per_node=8, seq_len=4096)
    p = plan_strategy(setup, "zero3")
    assert p.max_micro_batch >= 1 and p.fits
    budget = setup.gpu.memory_bytes
    assert memory_breakdown(setup, "zero3", p.max_micro_batch, False).total <= budget
    assert memory_breakdown(setup, "zero3", p.max_micro_batch + 1, False).total > budget
    assert p.max_micro_batch_ckpt > p.max_micro_batch


def test_accumulation_reaches_the_target_global_batch() -> None:
    setup = replace(FORUM, gpu=get_gpu("h200"), micro_batch=3, global_batch=100)
    p = plan_strategy(setup, "zero3")
    assert p.accum == 9  # ceil(100 / (3 · 4))
    assert p.global_batch_samples == 108 and p.global_batch_tokens == 108 * 2048


def test_zero3_sends_one_and_a_half_times_ddp_traffic_at_equal_dtype() -> None:
    psi = 10**9
    ddp = comm_bytes_per_step("ddp", psi, psi, 2, 2, accum=1, world=8)
    zero3 = comm_bytes_per_step("zero3", psi, psi, 2, 2, accum=1, world=8)
    assert zero3 == pytest.approx(1.5 * ddp)  # ZeRO paper §7.2.2
    zero2 = comm_bytes_per_step("zero2", psi, psi, 2, 2, accum=4, world=8)
    assert zero2 == pytest.approx(5 * ddp / 2)  # reduce-scatter every micro-step + one all-gather


def test_zero3_across_nodes_warns_about_cross_node_traffic() -> None:
    setup = replace(FORUM, gpu=get_gpu("a100-80gb"), gpus_per_node=8, nodes=2, precision="bf16")
    codes = {w.code for w in advice.warnings(setup, plan(setup, ("zero3",)))}
    assert "zero3-cross-node" in codes


def test_checkpointing_adds_a_recomputed_forward_to_the_flops() -> None:
    model = PRESETS["llama-7b"]
    n = model.num_parameters() - model.vocab_size * model.hidden_size
    assert flops_per_token(model, 2048, True, False) - flops_per_token(model, 2048, False, False) == 2 * n


def test_gpu_table_rows_are_complete_and_v100_has_no_bf16() -> None:
    for gpu in gpu_table().values():
        assert gpu.memory_gib > 0 and gpu.peak_tflops["fp32"] > 0 and gpu.link_gbps > 0 and gpu.source
        assert gpu.bf16 == ("bf16" in gpu.peak_tflops)
    assert not get_gpu("v100-32gb").bf16
    assert get_gpu(None, 48).memory_gib == 48


def test_auto_micro_batch_spreads_the_target_over_the_fewest_micro_steps() -> None:
    assert micro_and_accum(FORUM, largest=12) == (8, 2)  # 64 samples on 4 GPUs, ≤ 12 each
    assert micro_and_accum(FORUM, largest=0) == (1, 16)  # nothing fits: shown at micro-batch 1
    assert micro_and_accum(replace(FORUM, global_batch=None), largest=5) == (5, 1)
