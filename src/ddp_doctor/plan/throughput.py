"""How long a step takes from its FLOPs, and how many bytes each rank sends per step.

Compute: training FLOPs per token = 6·N + 12·L·H·Q·T (Chowdhery et al. 2022, PaLM, Appendix B:
N non-embedding parameters, L layers, H heads, Q head dim, T sequence length; the second term is
attention). The lm_head matmul is counted in N; the embedding lookup is not a matmul. Activation
checkpointing recomputes the forward (+2·N per token, the 8·N of Chen et al. 2016 / Korthikanti
et al. 2022). LoRA skips the frozen weights' gradients (-2·N). Time = FLOPs / (GPUs · peak · MFU),
with the model FLOPs utilisation MFU an assumption the user can set.

Communication per optimizer step, bytes sent by each rank (ZeRO paper §7.2; ring collectives
move (N−1)/N of the buffer per rank for reduce-scatter and all-gather, twice that for all-reduce):

* ddp: one gradient all-reduce per optimizer step (no_sync during accumulation): 2Ψ.
* zero1: gradients reduce-scattered once per step, updated weights all-gathered: Ψ + Ψ.
* zero2: gradients reduce-scattered every micro-step (they are sharded), weights all-gathered
  once: A·Ψ + Ψ.
* zero3 / fsdp: weights all-gathered in forward and again in backward and gradients
  reduce-scattered, every micro-step: 3Ψ·A (1.5× DDP at A = 1, as the paper states).

Bandwidth: the GPU link inside a node; across nodes the node's network bandwidth shared by its
GPUs. Step time is bracketed by perfect overlap (max of compute and communication) and none (sum).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddp_doctor.plan.memory import Strategy
from ddp_doctor.presets import ModelPreset

# Model FLOPs utilisation assumed when the user gives none. PaLM reports 46.2% (540B, TPU v4);
# Megatron-LM trains GPT models at 44–52% of A100 peak (Narayanan et al. 2021, Table 1); typical
# HF + DDP/FSDP fine-tuning runs lower, so 40% is a round, optimistic-but-reachable figure.
DEFAULT_MFU = 0.40
# Inter-node network per node when the user gives none: one 100 Gb/s NIC (EDR InfiniBand /
# 100 GbE), i.e. 12.5 GB/s.
DEFAULT_NODE_NETWORK_GBPS = 12.5


def flops_per_token(model: ModelPreset, seq_len: int, checkpointing: bool, lora: bool) -> float:
    n = model.num_parameters() - model.vocab_size * model.hidden_size  # non-embedding (+ lm_head)
    attention = 12 * model.num_hidden_layers * model.num_attention_heads * model.head_dim * seq_len
    matmul = (6 - (2 if lora else 0) + (2 if checkpointing else 0)) * n
    return matmul + attention


def comm_bytes_per_step(
    strategy: Strategy,
    trainable: int,
    weights_total: int,
    grad_bytes: int,
    weight_bytes: int,
    accum: int,
    world: int,
) -> float:
    """Bytes each rank sends per optimizer step (module docstring)."""
    if world == 1:
        return 0.0
    ring = (world - 1) / world
    grads = trainable * grad_bytes * ring
    if strategy == "ddp":
        return 2 * grads
    if strategy == "zero1":
        return grads + trainable * weight_bytes * ring
    if strategy == "zero2":
        return accum * grads + trainable * weight_bytes * ring
    return accum * (2 * weights_total * weight_bytes * ring + grads)


@dataclass(frozen=True)
class StepTime:
    compute_s: float
    comm_s: float

    @property
    def overlapped_s(self) -> float:
        return max(self.compute_s, self.comm_s)

    @property
    def serial_s(self) -> float:
        return self.compute_s + self.comm_s


def step_time(
    flops: float,
    gpus: int,
    peak_flops: float,
    mfu: float,
    comm_bytes: float,
    link_gbps: float,
    nodes: int,
    gpus_per_node: int,
    node_network_gbps: float,
) -> StepTime:
    compute = flops / (gpus * peak_flops * mfu)
    bandwidth = link_gbps if nodes == 1 else min(link_gbps, node_network_gbps / gpus_per_node)
    return StepTime(compute_s=compute, comm_s=comm_bytes / (bandwidth * 1e9))
