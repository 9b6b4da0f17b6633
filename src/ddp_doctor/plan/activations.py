"""How many bytes a HF `LlamaForCausalLM` forward keeps for backward (activation memory).

Counted tensor by tensor from what autograd saves in transformers' LLaMA (SDPA attention, no
padding mask so GQA runs with `enable_gqa`, no dropout), for batch b, sequence s, hidden h,
intermediate i, heads n, KV width k = kv_heads·head_dim, vocab V, layers L:

* RMSNorm (`x.float()`, `pow`, `rsqrt`, `* weight`): the fp32 input, the normalised x̂ and its
  weighted output y in the compute dtype, and rsqrt per row: (4 + 2a)·bsh + 4·bs bytes.
* attention: SDPA saves q, k, v, its output (a bytes each) and the fp32 log-sum-exp per head:
  a·(2bsh + 2bsk) + 4·bns. RoPE saves cos and sin once per forward (shared by every layer).
* MLP `down(silu(gate(y)) * up(y))`: gate out, silu out, up out, their product: 4a·bsi.
* outside the layers: input ids (8·bs), the final norm, and the loss: `log_softmax` of the fp32
  logits (4·bsV) plus the shifted labels and two fp32 scalars. The labels are padded by one and
  sliced; flattening copies them (8·bs) when b > 1 and is a view of the padded row (8·(s+1))
  when b = 1.

Under `torch.autocast` with fp32 weights (DDP + native AMP) the residual stream stays fp32, every
nn.Linear saves its own half copy of its input (5 per layer), and the half copies of all linear
weights stay cached for backward (2 bytes per linear parameter).

With per-layer activation checkpointing (HF `gradient_checkpointing_enable` / `activation_checkpointing_enable`) only each layer's
input (and the position ids) is kept; backward recomputes one layer at a time, so the peak adds
one layer's activations back.

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", eq. 2)
give the same kind of count (34·sbh + 5·as²b per GPT layer) for Megatron's GPT with eager
attention; this one follows the LLaMA code that users run. Checked byte-for-byte against the
saved tensors of the `tiny` and `small` presets on CPU (tests/plan/test_activations_measured.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ddp_doctor.plan.model import linear_parameters
from ddp_doctor.presets import ModelPreset

# "fp32": everything fp32. "half": weights and compute in fp16/bf16 (DeepSpeed, FSDP
# MixedPrecision). "autocast": fp32 weights, torch.autocast to fp16/bf16 (DDP + native AMP).
Mode = Literal["fp32", "half", "autocast"]

FP32 = 4
HALF = 2
INT64 = 8
# nn.Linear calls per decoder layer whose input autocast casts separately: q, k, v and gate, up
# (o_proj and down_proj already receive half tensors).
AUTOCAST_INPUT_CASTS = 5


@dataclass(frozen=True)
class ActivationBytes:
    """Activation memory of one forward, by part (bytes)."""

    per_layer: int  # what one decoder layer saves without checkpointing
    layers: int  # what all decoder layers keep until backward
    outside: int  # ids, RoPE tables, final norm, loss
    weight_cache: int  # autocast's half copies of linear weights kept for backward
    recompute: int  # extra held while one checkpointed layer is recomputed (0 without)

    @property
    def stored(self) -> int:
        """Bytes held from the end of forward until backward reaches them."""
        return self.layers + self.outside + self.weight_cache

    @property
    def peak(self) -> int:
        return self.stored + self.recompute


def activation_bytes(
    model: ModelPreset, micro_batch: int, seq_len: int, mode: Mode, checkpointing: bool = False
) -> ActivationBytes:
    b, s, h, i = micro_batch, seq_len, model.hidden_size, model.intermediate_size
    n, d, L, V = model.num_attention_heads, model.head_dim, model.num_hidden_layers, model.vocab_size
    k = model.num_key_value_heads * d
    a = FP32 if mode == "fp32" else HALF
    bs, bsh = b * s, b * s * h

    if mode == "autocast":
        norm = 2 * FP32 * bsh + FP32 * bs  # fp32 x and x̂; y is saved as the linears' half copies
        casts = AUTOCAST_INPUT_CASTS * a * bsh
        residual = FP32
        rope_dtype = FP32  # cos/sin follow the fp32 residual stream
    else:
        norm = (FP32 + 2 * a) * bsh + FP32 * bs
        casts = 0
        residual = a
        rope_dtype = a
    attention = a * (2 * bsh + 2 * bs * k) + FP32 * b * n * s
    mlp = 4 * a * bs * i
    per_layer = 2 * norm + casts + attention + mlp

    final_norm = norm + (a * bsh if mode == "autocast" else 0)  # lm_head's half copy of y
    labels = INT64 * (bs if b > 1 else s + 1)
    loss = FP32 * bs * V + labels + 2 * FP32
    rope = 2 * s * d * rope_dtype
    outside = INT64 * bs + rope + final_norm + loss

    lm_head = V * h  # lm_head runs outside the checkpointed layers, tied or not
    if checkpointing:
        layers = L * residual * bsh + INT64 * s  # each layer's input, plus the position ids
        weight_cache = HALF * lm_head if mode == "autocast" else 0
        recompute = per_layer
    else:
        layers = L * per_layer
        weight_cache = HALF * linear_parameters(model) if mode == "autocast" else 0
        recompute = 0
    return ActivationBytes(
        per_layer=per_layer, layers=layers, outside=outside, weight_cache=weight_cache, recompute=recompute
    )


def logits_transient_bytes(model: ModelPreset, micro_batch: int, seq_len: int, mode: Mode) -> int:
    """Short-lived vocab-sized tensors around the loss (an estimate, not counted in `stored`).

    The logits returned to the caller (compute dtype) and, at the start of backward, the fp32
    gradient of log_softmax and of its input: 4·bsV each.
    """
    a = FP32 if mode == "fp32" else HALF
    return micro_batch * seq_len * model.vocab_size * (a + 2 * FP32)
