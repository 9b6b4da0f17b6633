"""Bytes per GPU of the model states (weights, gradients, optimizer states) under each strategy.

ZeRO (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", §3.1 and Fig. 1): mixed-precision Adam keeps 2Ψ bytes of fp16 weights, 2Ψ of fp16
gradients and KΨ of optimizer states (fp32 master weights, momentum, variance: K = 12). Over N_d
data-parallel ranks, stage 1 (P_os) shards the optimizer states, stage 2 (P_os+g) also the
gradients, stage 3 (P_os+g+p) also the weights:

    ddp   (2 + 2 + K)·Ψ          zero1  (2 + 2)·Ψ + K·Ψ/N_d
    zero2 2Ψ + (2 + K)·Ψ/N_d     zero3  (2 + 2 + K)·Ψ/N_d

How the 16 bytes split depends on the implementation, which matters once a part is sharded:

* fp32 training: 4 + 4 + 8 (Adam's m and v), nothing to master.
* DDP with torch.autocast (native AMP): fp32 weights and gradients, 4 + 4 + 8; autocast's half
  weight copies are counted with the activations.
* DeepSpeed ZeRO 1/2/3 in fp16/bf16: 2 + 2 + 12 as in the paper.
* FSDP with MixedPrecision(param_dtype=bf16): sharded fp32 weights, gradients and Adam states,
  4 + 4 + 8, all divided by N_d (same total as ZeRO-3).

torch.optim.Adam(W) also keeps one fp32 `step` scalar per parameter tensor; it is counted so that
the DDP/fp32 figures equal a measured optimizer state byte for byte.

Buffers for communication (per GPU, in flight during backward):

* DDP copies gradients into flat buckets (the default gradient_as_bucket_view=False), one more
  gradient-sized buffer (PyTorch DistributedDataParallel docs, `gradient_as_bucket_view`).
* ZeRO 1/2: DeepSpeed's reduce bucket, `reduce_bucket_size` = 5e8 elements by default
  (DeepSpeed configuration docs, zero_optimization).
* ZeRO-3: 4 bytes × the largest module's parameters, the fp16 weights and gradients of the module
  being gathered (DeepSpeed `estimate_zero3_model_states_mem_needs`).
* FSDP: the unit being computed and the one prefetched, gathered in bf16, plus one unit's fp32
  gradients before reduce-scatter; units are decoder layers and the root (embeddings + head).

With `offload` (ZeRO-Offload, Ren et al. 2021; FSDP CPUOffload) the optimizer states (and for
ZeRO-2 the gradient shards; for ZeRO-3/FSDP also the weights) live in CPU memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Strategy = Literal["ddp", "zero1", "zero2", "zero3", "fsdp"]
STRATEGIES: tuple[Strategy, ...] = ("ddp", "zero1", "zero2", "zero3", "fsdp")
Precision = Literal["fp32", "fp16", "bf16"]

# ZeRO paper §3.1: fp32 master weights, Adam momentum and variance (4 + 4 + 4 bytes).
ADAM_MIXED_K = 12
# Adam's momentum and variance in fp32 when the weights are already fp32.
ADAM_FP32_K = 8
# torch.optim.Adam(W) `step`: a 0-dim float32 tensor per parameter tensor (capturable=False).
ADAM_STEP_BYTES = 4
# DeepSpeed zero_optimization.reduce_bucket_size default, in elements.
DEEPSPEED_REDUCE_BUCKET = 500_000_000
# DeepSpeed estimate_zero3_model_states_mem_needs: largest_layer_memory = 4 * largest_layer_params.
ZERO3_LIVE_BYTES_PER_PARAM = 4
# FSDP2 gathers the next unit while computing the current one (one unit of prefetch).
FSDP_GATHERED_UNITS = 2


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each model state, and which of them the strategy shards."""

    weight: int
    grad: int
    optimizer: int
    shard_weights: bool
    shard_grads: bool
    shard_optimizer: bool


def state_bytes(strategy: Strategy, precision: Precision) -> StateBytes:
    """How many bytes per parameter each state takes, and what is sharded (module docstring)."""
    if precision == "fp32":
        w, g, o = 4, 4, ADAM_FP32_K
    elif strategy in ("ddp", "fsdp"):
        w, g, o = 4, 4, ADAM_FP32_K  # native AMP / FSDP MixedPrecision keep fp32 weights and grads
    else:
        w, g, o = 2, 2, ADAM_MIXED_K
    stage = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}[strategy]
    return StateBytes(
        weight=w,
        grad=g,
        optimizer=o,
        shard_weights=stage >= 3,
        shard_grads=stage >= 2,
        shard_optimizer=stage >= 1,
    )


@dataclass(frozen=True)
class ModelStates:
    """Model-state bytes on one GPU, and what offloading moved to CPU memory (per GPU)."""

    weights: float
    grads: float
    optimizer: float
    cpu: float = 0.0

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer


def model_states(
    frozen: int,
    trainable: int,
    tensors: int,
    strategy: Strategy,
    precision: Precision,
    world: int,
    offload: bool = False,
) -> ModelStates:
    """Per-GPU bytes of weights (frozen and trainable), gradients and Adam states (trainable only).

    `tensors` is the number of trainable parameter tensors (for Adam's step scalars). Frozen
    weights (the base model under LoRA) are loaded in the compute dtype, as PEFT users do
    (`torch_dtype=torch.bfloat16`): they need no fp32 master copy.
    """
    sb = state_bytes(strategy, precision)
    frozen_bytes = 4 if precision == "fp32" else 2
    weights = float(frozen * frozen_bytes + trainable * sb.weight)
    grads = float(trainable * sb.grad)
    optimizer = float(trainable * sb.optimizer + tensors * ADAM_STEP_BYTES)
    if sb.shard_weights:
        weights /= world
    if sb.shard_grads:
        grads /= world
    if sb.shard_optimizer:
        optimizer /= world
    cpu = 0.0
    if offload and strategy != "ddp":
        cpu, optimizer = cpu + optimizer, 0.0
        if strategy in ("zero2", "zero3", "fsdp"):
            cpu, grads = cpu + grads, 0.0
        if strategy in ("zero3", "fsdp"):
            cpu, weights = cpu + weights, 0.0
    return ModelStates(weights=weights, grads=grads, optimizer=optimizer, cpu=cpu)


def zero_paper_states(psi: float, world: int, stage: int, k: int = ADAM_MIXED_K) -> float:
    """Model-state bytes per GPU of ZeRO stage 0–3 exactly as in the paper's Fig. 1 (2 + 2 + K)."""
    shard = [(False, False, False), (False, False, True), (False, True, True), (True, True, True)]
    p, g, o = shard[stage]
    return 2 * psi / (world if p else 1) + 2 * psi / (world if g else 1) + k * psi / (world if o else 1)


def comm_buffer_bytes(
    strategy: Strategy,
    precision: Precision,
    trainable: int,
    largest_module: int,
    largest_unit: int,
    world: int,
) -> float:
    """Communication buffers per GPU (module docstring); none when there is a single rank."""
    if world == 1:
        return 0.0
    sb = state_bytes(strategy, precision)
    if strategy == "ddp":
        return float(trainable * sb.grad)
    if strategy in ("zero1", "zero2"):
        return float(min(DEEPSPEED_REDUCE_BUCKET, trainable) * sb.grad)
    if strategy == "zero3":
        return float(ZERO3_LIVE_BYTES_PER_PARAM * largest_module)
    compute = 4 if precision == "fp32" else 2
    return float(largest_unit * (FSDP_GATHERED_UNITS * compute + sb.grad))
