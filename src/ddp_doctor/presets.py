"""Model presets: LLaMA architectures by name, as plain data (no torch, no transformers).

Shared by the reference trainer (which instantiates the CPU ones) and `ddp-doctor plan` (which
sizes the real ones); neither owns the other, so the presets live beside both.

`tiny` and `small` are what tests and benchmarks instantiate on CPU; the real LLaMA sizes are
used by `ddp-doctor plan` and are never instantiated in tests. Shapes of the real models follow
their published Hugging Face configs (meta-llama/Llama-2-7b-hf, Llama-2-13b-hf, ...).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ModelPreset:
    name: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    tie_word_embeddings: bool = False
    rms_norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def num_parameters(self) -> int:
        """Exact parameter count of LlamaForCausalLM with this config (no biases)."""
        h, i, L = self.hidden_size, self.intermediate_size, self.num_hidden_layers
        kv = self.num_key_value_heads * self.head_dim
        attention = h * h * 2 + h * kv * 2  # q, o: h×h; k, v: h×kv
        mlp = 3 * h * i  # gate, up, down
        norms = 2 * h
        embed = self.vocab_size * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return embed + head + L * (attention + mlp + norms) + h  # final norm

    def hf_config_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `transformers.LlamaConfig`."""
        kwargs = asdict(self)
        kwargs.pop("name")
        return kwargs


PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in (
        # ~0.86M parameters: byte vocabulary, the CPU test model.
        ModelPreset(
            "tiny",
            vocab_size=256,
            hidden_size=128,
            intermediate_size=352,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=512,
        ),
        # ~19M parameters: the benchmark model.
        ModelPreset(
            "small",
            vocab_size=256,
            hidden_size=512,
            intermediate_size=1376,
            num_hidden_layers=6,
            num_attention_heads=8,
            num_key_value_heads=8,
            max_position_embeddings=1024,
        ),
        ModelPreset(
            "llama-7b",
            vocab_size=32000,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=4096,
        ),
        ModelPreset(
            "llama-13b",
            vocab_size=32000,
            hidden_size=5120,
            intermediate_size=13824,
            num_hidden_layers=40,
            num_attention_heads=40,
            num_key_value_heads=40,
            max_position_embeddings=4096,
        ),
        ModelPreset(
            "llama-70b",
            vocab_size=32000,
            hidden_size=8192,
            intermediate_size=28672,
            num_hidden_layers=80,
            num_attention_heads=64,
            num_key_value_heads=8,
            max_position_embeddings=4096,
        ),
        ModelPreset(
            "llama3-8b",
            vocab_size=128256,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            max_position_embeddings=8192,
            rms_norm_eps=1e-5,
        ),
    )
}

# Presets that tests and the demo may instantiate on CPU.
CPU_PRESETS: tuple[str, ...] = ("tiny", "small")


def get_preset(name: str) -> ModelPreset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model preset {name!r}; choose one of {', '.join(PRESETS)}") from None
