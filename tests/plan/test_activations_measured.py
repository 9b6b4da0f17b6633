"""Activation memory: the formula equals the bytes a real HF LLaMA forward keeps for backward
(measured on CPU with tests/plan/measure.py), with and without checkpointing, in fp32, in a bf16
model and under bf16 autocast."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_doctor.plan.activations import activation_bytes
from ddp_doctor.presets import PRESETS

from .measure import build_llama, measured_activation_bytes

# A grouped-query variant of tiny (2 KV heads for 4 query heads), to check the k/v width term.
TINY_GQA = replace(PRESETS["tiny"], name="tiny-gqa", num_key_value_heads=2)


@pytest.mark.parametrize("checkpointing", [False, True], ids=["plain", "ckpt"])
@pytest.mark.parametrize("mode", ["fp32", "half", "autocast"])
@pytest.mark.parametrize("name", ["tiny", "small"])
def test_activation_formula_equals_measured_saved_bytes(name: str, mode: str, checkpointing: bool) -> None:
    preset = PRESETS[name]
    model = build_llama(preset, mode, checkpointing)
    measured = measured_activation_bytes(model, preset.vocab_size, micro_batch=2, seq_len=48, mode=mode)
    predicted = activation_bytes(preset, 2, 48, mode, checkpointing).stored
    assert predicted == measured


@pytest.mark.parametrize("mode", ["fp32", "half"])
@pytest.mark.parametrize("micro_batch,seq_len", [(1, 100), (3, 33)])
def test_activation_formula_holds_for_other_shapes_and_grouped_query_attention(
    mode: str, micro_batch: int, seq_len: int
) -> None:
    model = build_llama(TINY_GQA, mode, checkpointing=False)
    measured = measured_activation_bytes(model, TINY_GQA.vocab_size, micro_batch, seq_len, mode)
    assert activation_bytes(TINY_GQA, micro_batch, seq_len, mode).stored == measured


def test_checkpointing_keeps_only_layer_inputs_and_recomputes_one_layer() -> None:
    preset = PRESETS["small"]
    plain = activation_bytes(preset, 4, 256, "half")
    ckpt = activation_bytes(preset, 4, 256, "half", checkpointing=True)
    assert ckpt.layers == preset.num_hidden_layers * 2 * 4 * 256 * preset.hidden_size + 8 * 256
    assert ckpt.peak == ckpt.stored + plain.per_layer
    assert ckpt.peak < plain.peak
