"""Weights, gradients and Adam state: the planner's bytes equal those of a real LlamaForCausalLM
+ AdamW after one optimizer step on CPU (tiny and small presets), byte for byte."""

from __future__ import annotations

import pytest
import torch

from ddp_doctor.plan.memory import model_states
from ddp_doctor.plan.model import lora_parameter_tensors, lora_parameters, num_parameter_tensors
from ddp_doctor.presets import PRESETS

from .measure import build_llama


def _nbytes(tensors) -> int:  # noqa: ANN001
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_fp32_model_states_equal_measured_bytes_after_one_adamw_step(name: str) -> None:
    preset = PRESETS[name]
    model = build_llama(preset, "fp32", checkpointing=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, preset.vocab_size, (2, 16))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()

    params = list(model.parameters())
    measured_weights = _nbytes(params)
    measured_grads = _nbytes(p.grad for p in params)
    measured_optimizer = _nbytes(
        t for state in opt.state.values() for t in state.values() if isinstance(t, torch.Tensor)
    )

    psi = preset.num_parameters()
    assert sum(p.numel() for p in params) == psi
    assert len(params) == num_parameter_tensors(preset)
    planned = model_states(0, psi, num_parameter_tensors(preset), "ddp", "fp32", world=1)
    assert planned.weights == measured_weights
    assert planned.grads == measured_grads
    assert planned.optimizer == measured_optimizer


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_lora_parameter_count_matches_adapters_on_q_and_v_of_the_real_model(name: str) -> None:
    preset, rank = PRESETS[name], 4
    model = build_llama(preset, "fp32", checkpointing=False)
    adapters = []
    for layer in model.model.layers:
        for proj in (layer.self_attn.q_proj, layer.self_attn.v_proj):
            adapters += [
                torch.nn.Linear(proj.in_features, rank, bias=False),
                torch.nn.Linear(rank, proj.out_features, bias=False),
            ]
    assert sum(a.weight.numel() for a in adapters) == lora_parameters(preset, rank)
    assert len(adapters) == lora_parameter_tensors(preset)
