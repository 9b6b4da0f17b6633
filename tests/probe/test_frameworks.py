"""accelerate, HF Trainer, FSDP2 and torch.compile scripts under `ddp-doctor run` (gloo, 2 ranks)."""

from __future__ import annotations

import math

import pytest
import torch

from probe.helpers import close, kind, read_rank, run_probe, torchrun
from probe.replay import replay, toy

pytestmark = pytest.mark.distributed  # starts process groups (gloo ranks)

WORLD = 2


def _steps(out, rank):
    return kind(read_rank(out, rank), "step")


def _assert_global_norm_is_the_clipped_total(out, n_steps):
    """The GLOBAL norm from the comm hook equals the total norm torch computes from the synced .grad."""
    per_rank = [_steps(out, rank) for rank in range(WORLD)]
    for rank_steps in per_rank:
        assert len(rank_steps) == n_steps
        for step in rank_steps:
            (clip,) = step["clip"]
            assert close(step["grad_sq_global"][-1], clip["total_norm"] ** 2)
    for a, b in zip(*per_rank):  # the averaged gradient is the same on every rank
        assert a["grad_sq_global"][-1] == b["grad_sq_global"][-1]
        assert a["grad_sq_local"][-1] != b["grad_sq_local"][-1]
        assert not set(a["input_hashes"]) & set(b["input_hashes"])


def test_accelerate_accumulate_records_two_micro_steps_synced_once(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("accelerate_accumulate.py"))
    n_steps = toy.EPOCHS * toy.N_SAMPLES // WORLD // toy.BATCH // toy.ACCUM
    _assert_global_norm_is_the_clipped_total(out, n_steps)
    for rank in range(WORLD):
        steps = _steps(out, rank)
        assert all(s["micro_steps"] == toy.ACCUM and s["sync"] == [0, 1] for s in steps)
        assert all(s["zero_grad"] == (0 if s["step"] == 0 else 1) for s in steps)
        # AcceleratedScheduler steps the wrapped scheduler num_processes times per optimizer step.
        assert [s["sched_steps"] for s in steps] == [0] + [WORLD] * (n_steps - 1)
        # LinearLR(1.0 → 0.5 over 8 scheduler steps), lr read at each optimizer step.
        expected_lr = [1e-2 * (1.0 - 0.5 * min(WORLD * k, 8) / 8) for k in range(n_steps)]
        assert [s["lr"][0] for s in steps] == pytest.approx(expected_lr)
        (ddp,) = kind(read_rank(out, rank), "config", "ddp")
        assert ddp["module"] == "Sequential"
        (sched,) = kind(read_rank(out, rank), "config", "scheduler")
        assert (sched["type"], sched["wrapper"], sched["split_batches"]) == (
            "LinearLR",
            "AcceleratedScheduler",
            False,
        )
    # accumulation == world size: accelerate's WORLD steps per optimizer step are not per-micro.
    from ddp_doctor.analysis.diagnose import diagnose

    (per_micro,) = [f for f in diagnose(out).findings if f.id == "scheduler-per-microstep"]
    assert per_micro.status == "ruled-out", per_micro.summary


def test_hf_trainer_tiny_llama_records_tokens_loss_function_and_schedule(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("hf_trainer_llama.py", str(tmp_path / "trainer")))
    _assert_global_norm_is_the_clipped_total(out, 3)
    batch, seq = 2, 16
    for rank in range(WORLD):
        records = read_rank(out, rank)
        (ddp,) = kind(records, "config", "ddp")
        assert ddp["module"] == "LlamaForCausalLM" and ddp["find_unused_parameters"] is True
        steps = kind(records, "step")
        assert [s["lr"][0] for s in steps] == pytest.approx([0.0, 1e-3, 5e-4])  # linear, 1 warmup step
        for step in steps:
            assert step["micro_steps"] == 2 and step["sync"][0] == 0 and step["sync"][1] >= 1
            assert step["samples"] == [batch, batch] and step["tokens"] == [batch * seq] * 2
            for root, fn in zip(step["losses"], step["loss_fn"]):
                # transformers 5: sum over the shifted labels, divided by the tokens of the whole
                # accumulated batch (num_items_in_batch) before backward.
                assert fn["reduction"] == "sum" and fn["n_valid"] == batch * (seq - 1)
                assert close(root, fn["value"] / (2 * batch * (seq - 1)))


def test_fsdp2_reduce_scatter_gives_sync_pattern_and_norms(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("fsdp2.py", str(tmp_path / "p.pt")))
    expected = replay(WORLD, lambda p: torch.optim.SGD(p, lr=toy.LR, momentum=0.9))
    per_rank = [_steps(out, rank) for rank in range(WORLD)]
    for rank, steps in enumerate(per_rank):
        assert len(steps) == len(expected)
        for got, want in zip(steps, expected):
            assert got["micro_steps"] == toy.ACCUM and got["sync"] == [0, 2]  # two sharded groups
            assert all(close(a, b) for a, b in zip(got["losses"], want.losses[rank]))
            assert close(got["grad_sq_local"][-1], want.local_sq[rank])
        (config,) = kind(read_rank(out, rank), "config", "fsdp")
        assert config["version"] == 2 and config["module"] == "FSDPSequential"
    for i, want in enumerate(expected):  # each rank holds one shard of the averaged gradient
        assert close(sum(steps[i]["grad_sq_global"][-1] for steps in per_rank), want.global_sq)


@pytest.mark.slow
def test_compiled_ddp_model_keeps_sync_pattern_and_records_compile_order(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("compiled_ddp.py"))
    for rank in range(WORLD):
        records = read_rank(out, rank)
        (config,) = kind(records, "config", "compile")
        assert config["order"] == "after_ddp" and config["target"] == "DistributedDataParallel"
        steps = kind(records, "step")
        assert len(steps) == 2
        for step in steps:
            assert step["micro_steps"] == toy.ACCUM and step["sync"][:-1] == [0] and step["sync"][-1] >= 1
            assert math.isfinite(step["grad_sq_global"][-1])
