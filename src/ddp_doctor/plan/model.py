"""Which model is being planned: a preset name or a Hugging Face LLaMA-style config.json.

The config is read as plain JSON (transformers is not imported: planning must be instant and
must not need the model). Parameter counts come from `ModelPreset.num_parameters`, which is exact
for `LlamaForCausalLM`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ddp_doctor.trainer.presets import PRESETS, ModelPreset

# Parameter tensors per decoder layer of LlamaForCausalLM: q, k, v, o, gate, up, down, 2 RMSNorms.
TENSORS_PER_LAYER = 9
# Projections PEFT's LoraConfig targets by default for LLaMA
# (peft/utils/constants.py, TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING["llama"]).
LORA_TARGETS: tuple[str, ...] = ("q_proj", "v_proj")


def load_model(spec: str) -> ModelPreset:
    """A preset by name, or a LLaMA-style `config.json` (a file, or a folder holding one)."""
    if spec in PRESETS:
        return PRESETS[spec]
    path = Path(spec)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ValueError(
            f"--model {spec!r} is neither a preset ({', '.join(PRESETS)}) nor a config.json path"
        )
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    missing = [
        k
        for k in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
        )
        if k not in cfg
    ]
    if missing:
        raise ValueError(f"{path}: not a LLaMA-style config, missing {', '.join(missing)}")
    return ModelPreset(
        name=cfg.get("_name_or_path") or path.parent.name or path.stem,
        vocab_size=int(cfg["vocab_size"]),
        hidden_size=int(cfg["hidden_size"]),
        intermediate_size=int(cfg["intermediate_size"]),
        num_hidden_layers=int(cfg["num_hidden_layers"]),
        num_attention_heads=int(cfg["num_attention_heads"]),
        num_key_value_heads=int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"]),
        max_position_embeddings=int(cfg.get("max_position_embeddings", 2048)),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
    )


def num_parameter_tensors(model: ModelPreset) -> int:
    """Parameter tensors of LlamaForCausalLM: embedding, L layers, final norm, untied lm_head."""
    return 1 + TENSORS_PER_LAYER * model.num_hidden_layers + 1 + (0 if model.tie_word_embeddings else 1)


def embedding_parameters(model: ModelPreset) -> int:
    """Input embedding plus (untied) output head: the vocab-sized matrices."""
    return model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2)


def layer_parameters(model: ModelPreset) -> int:
    """Parameters of one decoder layer (the FSDP / ZeRO-3 gather unit)."""
    per_layers = model.num_parameters() - embedding_parameters(model) - model.hidden_size
    return per_layers // model.num_hidden_layers


def linear_parameters(model: ModelPreset) -> int:
    """Parameters in nn.Linear layers (what torch.autocast casts): all but embedding and norms."""
    embed = model.vocab_size * model.hidden_size
    norms = (2 * model.num_hidden_layers + 1) * model.hidden_size
    return model.num_parameters() - embed - norms


def lora_parameters(model: ModelPreset, rank: int) -> int:
    """LoRA adapter parameters r·(d_in + d_out) on q_proj and v_proj of every layer (Hu et al. 2021)."""
    h, kv = model.hidden_size, model.num_key_value_heads * model.head_dim
    return model.num_hidden_layers * rank * ((h + h) + (h + kv))


def lora_parameter_tensors(model: ModelPreset) -> int:
    """Two adapter matrices (A, B) per targeted projection per layer."""
    return 2 * len(LORA_TARGETS) * model.num_hidden_layers
