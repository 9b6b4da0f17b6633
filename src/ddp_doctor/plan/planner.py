"""Put memory, time and advice together: one `StrategyPlan` per strategy for a setup.

Per GPU: total = model states (memory.py) + activations (activations.py; with or without
checkpointing) + the logits' transient tensors + communication buffers + allocator slack. The
largest micro-batch that fits is found by bisection (memory grows monotonically with it); the
accumulation for a target global batch is ceil(global / (micro-batch · data-parallel ranks)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddp_doctor.plan import activations as act
from ddp_doctor.plan import memory as mem
from ddp_doctor.plan import model as shapes
from ddp_doctor.plan import throughput as tp
from ddp_doctor.plan.hardware import GpuSpec
from ddp_doctor.presets import ModelPreset

# Assumed, not measured here (no GPU in CI): the CUDA context, cuBLAS workspaces and NCCL
# channel buffers of one training process. Lazy-loaded CUDA 12 contexts take ~0.3–0.5 GiB;
# cuBLAS and NCCL add a few hundred MiB more.
CUDA_OVERHEAD_BYTES = 1 * 2**30
# Assumed share of the dynamic allocations (activations, transients, buffers) that the caching
# allocator holds as reserved-but-unallocated blocks (fragmentation).
FRAGMENTATION = 0.10
# Bisection upper bound for the largest micro-batch.
MAX_MICRO_BATCH = 1 << 16


@dataclass(frozen=True)
class Setup:
    """The question: this model, on this hardware, with these training settings."""

    model: ModelPreset
    gpu: GpuSpec
    gpus_per_node: int
    nodes: int = 1
    seq_len: int = 2048
    micro_batch: int | None = None  # None: the largest that fits
    accum: int | None = None  # None: from global_batch, else 1
    global_batch: int | None = None  # target samples per optimizer step
    precision: mem.Precision = "bf16"
    checkpointing: bool = False
    offload: bool = False
    lora_rank: int = 0
    mfu: float = tp.DEFAULT_MFU
    node_network_gbps: float = tp.DEFAULT_NODE_NETWORK_GBPS

    @property
    def world(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU by component."""

    weights: float
    grads: float
    optimizer: float
    activations: float  # saved for backward (+ autocast weight copies) at the chosen setting
    activations_no_ckpt: float
    activations_ckpt: float  # stored + one recomputed layer
    logits_transient: float
    comm_buffers: float
    cuda_overhead: float
    fragmentation: float
    cpu_offload: float  # per GPU, in host memory

    @property
    def total(self) -> float:
        return (
            self.weights
            + self.grads
            + self.optimizer
            + self.activations
            + self.logits_transient
            + self.comm_buffers
            + self.cuda_overhead
            + self.fragmentation
        )


@dataclass(frozen=True)
class StrategyPlan:
    strategy: mem.Strategy
    micro_batch: int
    accum: int
    memory: MemoryBreakdown
    fits: bool
    max_micro_batch: int  # 0: not even one sample fits
    max_micro_batch_ckpt: int
    global_batch_samples: int
    global_batch_tokens: int
    flops_per_step: float
    time: tp.StepTime
    comm_bytes_per_step: float


def activation_mode(strategy: mem.Strategy, precision: mem.Precision, lora: bool) -> act.Mode:
    """fp32; DDP + autocast over fp32 weights; or weights in the compute dtype (sharded
    strategies, and LoRA whose frozen base is loaded in half precision)."""
    if precision == "fp32":
        return "fp32"
    return "autocast" if strategy == "ddp" and not lora else "half"


def _trainable(setup: Setup) -> tuple[int, int, int]:
    """(frozen, trainable, trainable tensors)."""
    m = setup.model
    if setup.lora_rank:
        return (
            m.num_parameters(),
            shapes.lora_parameters(m, setup.lora_rank),
            shapes.lora_parameter_tensors(m),
        )
    return 0, m.num_parameters(), shapes.num_parameter_tensors(m)


def memory_breakdown(
    setup: Setup, strategy: mem.Strategy, micro_batch: int, checkpointing: bool
) -> MemoryBreakdown:
    m = setup.model
    frozen, trainable, tensors = _trainable(setup)
    states = mem.model_states(
        frozen, trainable, tensors, strategy, setup.precision, setup.world, setup.offload
    )
    mode = activation_mode(strategy, setup.precision, lora=bool(setup.lora_rank))
    plain = act.activation_bytes(m, micro_batch, setup.seq_len, mode, checkpointing=False)
    ckpt = act.activation_bytes(m, micro_batch, setup.seq_len, mode, checkpointing=True)
    chosen = ckpt if checkpointing else plain
    logits = act.logits_transient_bytes(m, micro_batch, setup.seq_len, mode)
    largest_module = max(m.vocab_size * m.hidden_size, m.hidden_size * m.intermediate_size)
    largest_unit = max(shapes.layer_parameters(m), shapes.embedding_parameters(m) + m.hidden_size)
    buffers = mem.comm_buffer_bytes(
        strategy, setup.precision, trainable, largest_module, largest_unit, setup.world
    )
    dynamic = chosen.peak + logits + buffers
    return MemoryBreakdown(
        weights=states.weights,
        grads=states.grads,
        optimizer=states.optimizer,
        activations=float(chosen.peak),
        activations_no_ckpt=float(plain.peak),
        activations_ckpt=float(ckpt.peak),
        logits_transient=float(logits),
        comm_buffers=buffers,
        cuda_overhead=float(CUDA_OVERHEAD_BYTES),
        fragmentation=FRAGMENTATION * dynamic,
        cpu_offload=states.cpu,
    )


def max_micro_batch(setup: Setup, strategy: mem.Strategy, checkpointing: bool) -> int:
    """Largest micro-batch whose total fits in GPU memory (0 if none does)."""
    budget = setup.gpu.memory_bytes

    def fits(b: int) -> bool:
        return memory_breakdown(setup, strategy, b, checkpointing).total <= budget

    if not fits(1):
        return 0
    lo, hi = 1, MAX_MICRO_BATCH
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def micro_and_accum(setup: Setup, largest: int) -> tuple[int, int]:
    """Micro-batch and accumulation: the user's, else the fewest micro-steps that reach the
    target global batch with a micro-batch that fits, spread evenly (64 on 4 GPUs with at most
    12 per GPU: 8 × 2, not 12 × 2 = 96)."""
    limit = max(largest, 1)
    micro = setup.micro_batch
    if setup.accum:
        return micro or limit, setup.accum
    if not setup.global_batch:
        return micro or limit, 1
    accum = max(1, math.ceil(setup.global_batch / ((micro or limit) * setup.world)))
    if micro is None:
        micro = math.ceil(setup.global_batch / (accum * setup.world))
    return micro, accum


def plan_strategy(setup: Setup, strategy: mem.Strategy) -> StrategyPlan:
    best = max_micro_batch(setup, strategy, setup.checkpointing)
    best_ckpt = best if setup.checkpointing else max_micro_batch(setup, strategy, True)
    micro, accum = micro_and_accum(setup, best)
    breakdown = memory_breakdown(setup, strategy, micro, setup.checkpointing)
    samples = micro * accum * setup.world
    tokens = samples * setup.seq_len
    flops = tokens * tp.flops_per_token(
        setup.model, setup.seq_len, setup.checkpointing, lora=bool(setup.lora_rank)
    )
    frozen, trainable, _ = _trainable(setup)
    comm_weight = 4 if setup.precision == "fp32" else 2  # weights travel in the compute dtype
    comm_grad = mem.state_bytes(strategy, setup.precision).grad if strategy != "fsdp" else comm_weight
    comm = tp.comm_bytes_per_step(
        strategy, trainable, frozen + trainable, comm_grad, comm_weight, accum, setup.world
    )
    time = tp.step_time(
        flops,
        setup.world,
        setup.gpu.peak_flops(setup.precision),
        setup.mfu,
        comm,
        setup.gpu.link_gbps,
        setup.nodes,
        setup.gpus_per_node,
        setup.node_network_gbps,
    )
    return StrategyPlan(
        strategy=strategy,
        micro_batch=micro,
        accum=accum,
        memory=breakdown,
        fits=breakdown.total <= setup.gpu.memory_bytes,
        max_micro_batch=best,
        max_micro_batch_ckpt=best_ckpt,
        global_batch_samples=samples,
        global_batch_tokens=tokens,
        flops_per_step=flops,
        time=time,
        comm_bytes_per_step=comm,
    )


def plan(setup: Setup, strategies: tuple[mem.Strategy, ...] = mem.STRATEGIES) -> list[StrategyPlan]:
    return [plan_strategy(setup, s) for s in strategies]
