"""The model and its loss: a randomly initialised Hugging Face LlamaForCausalLM from a preset.

The loss is computed here from the logits, not by Hugging Face, so that its normalisation is
explicit: `token_loss_sum` returns the SUM of next-token cross-entropies over valid targets; the
loop divides by the global count of valid tokens of the whole optimizer step (all micro-steps,
all ranks), which makes the gradient independent of how the global batch is split into ranks and
micro-batches (the torchtitan convention, torchtitan/components/loss.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ddp_doctor.presets import CPU_PRESETS, get_preset
from ddp_doctor.trainer.config import TrainConfig
from ddp_doctor.trainer.data import IGNORE_INDEX


def build_model(cfg: TrainConfig) -> nn.Module:
    """LlamaForCausalLM with random weights drawn from torch.manual_seed(cfg.seed) (no download)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    preset = get_preset(cfg.preset)
    if preset.name not in CPU_PRESETS and not torch.cuda.is_available():
        raise ValueError(f"preset {preset.name!r} is for planning only; on CPU use one of {CPU_PRESETS}")
    # attn_implementation set explicitly: "sdpa" works eagerly and under torch.compile on CPU.
    config = LlamaConfig(  # type: ignore[call-arg]  # PretrainedConfig takes it; LlamaConfig's typed __init__ omits it
        **preset.hf_config_kwargs(), use_cache=False, attn_implementation=cfg.attn_implementation
    )
    torch.manual_seed(cfg.seed)
    model = LlamaForCausalLM(config)
    if cfg.freeze_layers:
        for layer in model.model.layers[: cfg.freeze_layers]:
            layer.requires_grad_(False)
    if cfg.checkpointing:
        # Non-reentrant: the reentrant variant runs a backward inside backward and breaks DDP hooks.
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def token_loss_sum(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Sum over valid targets of -log p(label), in float32. Labels are already shifted (data.py)."""
    return F.cross_entropy(
        logits.float().flatten(0, -2), labels.flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
    )


def valid_tokens(labels: torch.Tensor) -> torch.Tensor:
    """Number of targets that count in the loss."""
    return (labels != IGNORE_INDEX).sum()
