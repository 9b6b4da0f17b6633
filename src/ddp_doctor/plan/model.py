"""Which model is being planned: a preset name or a Hugging Face LLaMA-style config.json.

The config is read as plain JSON (transformers is not imported: planning must be instant and
must not need the model). Parameter counts come from `ModelPreset.num_parameters`, which is exact
for `LlamaForCausalLM`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ddp_doctor.presets import PRESETS, ModelPreset

# Parameter tensors per decoder layer of LlamaForCausalLM: q, k, v, o, gate, up, down, 2 RMSNorms.
TENSORS_PER_LAYER = 9
# Largest accepted model dimension (vocabulary, widths, layers, heads): 2^24 is above every
# published LLM config (vocabularies ≤ ~260k, widths ≤ ~50k) and keeps the planner's integer
# arithmetic far from float overflow. Larger values are rejected as input errors.
MAX_DIMENSION = 2**24
# A config.json larger than this is not a model config (HF configs are a few KiB).
MAX_CONFIG_BYTES = 1 << 20
# Projections PEFT's LoraConfig targets by default for LLaMA
# (peft/utils/constants.py, TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING["llama"]).
LORA_TARGETS: tuple[str, ...] = ("q_proj", "v_proj")


def load_model(spec: str) -> ModelPreset:
    """A preset by name, or a LLaMA-style `config.json` (a file, or a folder holding one)."""
    if spec in PRESETS:
        return PRESETS[spec]
    path = Path(spec)
    try:
        if path.is_dir():
            path = path / "config.json"
        is_file = path.is_file()
    except OSError as err:  # Python 3.11: EACCES on a folder on the way raises instead of False
        raise ValueError(f"--model {spec!r}: cannot access ({err.strerror or err})") from None
    if not is_file:
        raise ValueError(
            f"--model {spec!r} is neither a preset ({', '.join(PRESETS)}) nor a config.json path"
        )
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ValueError(f"{path}: {path.stat().st_size} bytes is too large for a model config.json")
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply to be a model config") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot read ({err.strerror or err})") from None
    if not isinstance(cfg, dict):
        raise ValueError(
            f"{path}: not a LLaMA-style config (a JSON object expected, got {type(cfg).__name__})"
        )
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
    heads = _dimension(cfg, "num_attention_heads", path)
    kv_heads = _dimension(cfg, "num_key_value_heads", path) if cfg.get("num_key_value_heads") else heads
    hidden = _dimension(cfg, "hidden_size", path)
    if heads > hidden:
        raise ValueError(f"{path}: num_attention_heads ({heads}) exceeds hidden_size ({hidden})")
    if kv_heads > heads:
        raise ValueError(f"{path}: num_key_value_heads ({kv_heads}) exceeds num_attention_heads ({heads})")
    eps = cfg.get("rms_norm_eps", 1e-6)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < 1:
        raise ValueError(f"{path}: rms_norm_eps must be a number in [0, 1), got {eps!r}")
    name = cfg.get("_name_or_path")
    return ModelPreset(
        name=name if isinstance(name, str) and name else (path.parent.name or path.stem),
        vocab_size=_dimension(cfg, "vocab_size", path),
        hidden_size=hidden,
        intermediate_size=_dimension(cfg, "intermediate_size", path),
        num_hidden_layers=_dimension(cfg, "num_hidden_layers", path),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=_dimension(cfg, "max_position_embeddings", path, default=2048),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        rms_norm_eps=float(eps),
    )


def _dimension(cfg: dict[str, Any], key: str, path: Path, default: int | None = None) -> int:
    """`cfg[key]` as a positive integer ≤ MAX_DIMENSION, else a ValueError naming the field."""
    value = cfg.get(key, default)
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_DIMENSION:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSION:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise ValueError(f"{path}: {key} must be an integer from 1 to {MAX_DIMENSION}, got {shown}")
    return value


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
