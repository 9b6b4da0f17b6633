"""What the hardware and settings imply: warnings, and which catalog hypotheses apply.

Every hypothesis and finding named here is an ID of ddp_doctor.core.catalog, so a plan tells the user
which checks of `ddp-doctor run` / `report` matter for their setup before they launch it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES, Severity, hypotheses_of
from ddp_doctor.plan.memory import Precision
from ddp_doctor.plan.planner import Setup, StrategyPlan, plan
from ddp_doctor.plan.throughput import flops_per_token

GIB = 2**30
# LoRA rank tried when nothing fits: Hu et al. 2021 (LoRA, Table 6) find r = 4–8 enough for
# GPT-3 175B adaptation.
SUGGESTED_LORA_RANK = 8


@dataclass(frozen=True)
class PlanWarning:
    """One consequence of the setup the user should know before renting GPUs."""

    code: str
    severity: Severity
    message: str


@dataclass(frozen=True)
class Applies:
    """A catalog hypothesis that applies to this setup, the findings to watch, and why."""

    hypothesis: str | None  # None for findings the catalog groups under no hypothesis
    findings: tuple[str, ...]
    reason: str

    def __post_init__(self) -> None:
        if self.hypothesis is not None and self.hypothesis not in HYPOTHESES:
            raise KeyError(f"unknown hypothesis id {self.hypothesis!r}")
        for fid in self.findings:
            if fid not in FINDINGS:
                raise KeyError(f"unknown finding id {fid!r}")


def resolve_precision(
    requested: Precision | None, gpu_bf16: bool, gpu_name: str
) -> tuple[Precision, list[PlanWarning]]:
    """bf16 where the GPU has it, else fp16 (V100, T4 have no bf16 tensor cores)."""
    if requested is None:
        if gpu_bf16:
            return "bf16", []
        return "fp16", [
            PlanWarning(
                "no-bf16",
                "warning",
                f"{gpu_name} has no bf16: mixed precision means fp16, which needs a "
                "GradScaler (loss scaling); watch fp16-overflow (skipped steps).",
            )
        ]
    if requested == "bf16" and not gpu_bf16:
        return "fp16", [
            PlanWarning(
                "no-bf16",
                "error",
                f"{gpu_name} has no bf16 tensor cores (compute capability < 8.0): "
                "bf16 would run at fp32 speed at best; planned as fp16 + GradScaler "
                "instead — watch fp16-overflow.",
            )
        ]
    return requested, []


def warnings(setup: Setup, plans: list[StrategyPlan]) -> list[PlanWarning]:
    out: list[PlanWarning] = []
    m = setup.model
    if setup.seq_len > m.max_position_embeddings:
        out.append(
            PlanWarning(
                "seq-too-long",
                "warning",
                f"--seq-len {setup.seq_len} exceeds the model's max_position_embeddings "
                f"({m.max_position_embeddings}).",
            )
        )
    if setup.offload:
        out.append(
            PlanWarning(
                "offload-time",
                "info",
                "With --offload the Adam step runs on the CPU and weights/gradients cross "
                "PCIe every step; that time is not in the step-time estimate.",
            )
        )
    if setup.offload and any(p.strategy == "ddp" for p in plans):
        out.append(
            PlanWarning(
                "offload-ddp",
                "info",
                "DDP cannot offload optimizer states; --offload applies to zero1/2/3 and fsdp.",
            )
        )
    fitting = [p for p in plans if p.fits]
    if not fitting:
        out.append(
            PlanWarning(
                "nothing-fits",
                "error",
                f"No strategy fits {setup.gpu.memory_gib:g} GiB per GPU at micro-batch "
                f"{plans[0].micro_batch}: try --checkpointing, --offload, --lora-rank, "
                "more GPUs, or a GPU with more memory.",
            )
        )
    for p in plans:
        states = p.memory.weights + p.memory.grads + p.memory.optimizer
        if p.strategy == "ddp" and states > setup.gpu.memory_bytes:
            out.append(
                PlanWarning(
                    "ddp-states",
                    "error",
                    f"DDP replicates the full model states on every GPU: {states / GIB:.1f} GiB "
                    f"(~16 bytes per trainable parameter with Adam) before any activation; "
                    f"the GPU has {setup.gpu.memory_gib:g} GiB. Shard them (zero2/zero3/fsdp).",
                )
            )
        if p.strategy in ("zero3", "fsdp") and setup.nodes > 1:
            out.append(
                PlanWarning(
                    "zero3-cross-node",
                    "warning",
                    f"{p.strategy}: weights are all-gathered in forward and backward on every "
                    f"micro-step across nodes: {p.comm_bytes_per_step / 1e9:.1f} GB per rank per "
                    f"step, ~{p.time.comm_s:.1f} s on the network vs ~{p.time.compute_s:.1f} s "
                    "of compute. Consider hybrid sharding (shard inside a node, replicate across).",
                )
            )
        if p.fits and not setup.checkpointing and p.max_micro_batch_ckpt > p.max_micro_batch:
            lora = bool(setup.lora_rank)
            extra = (
                flops_per_token(m, setup.seq_len, True, lora) / flops_per_token(m, setup.seq_len, False, lora)
                - 1
            )
            out.append(
                PlanWarning(
                    "checkpointing-raises-batch",
                    "info",
                    f"{p.strategy}: activation checkpointing raises the largest micro-batch "
                    f"from {p.max_micro_batch} to {p.max_micro_batch_ckpt} "
                    f"(+{extra:.0%} compute for the recomputed forward).",
                )
            )
    return out


@dataclass(frozen=True)
class Alternative:
    """A change of flags and the strategies that fit with it (largest micro-batch each)."""

    flags: str
    fits: dict[str, int]


def alternatives(setup: Setup, plans: list[StrategyPlan]) -> list[Alternative]:
    """When nothing fits: which of checkpointing, offload and LoRA (alone or together) would."""
    if any(p.fits for p in plans):
        return []
    strategies = tuple(p.strategy for p in plans)
    ckpts = (True,) if setup.checkpointing else (False, True)
    offloads = (True,) if setup.offload else (False, True)
    ranks = (setup.lora_rank,) if setup.lora_rank else (0, SUGGESTED_LORA_RANK)
    variants: list[tuple[str, Setup]] = []
    for ckpt, off, rank in product(ckpts, offloads, ranks):
        flags = [
            f
            for f, changed in (
                ("--checkpointing", ckpt != setup.checkpointing),
                ("--offload", off != setup.offload),
                (f"--lora-rank {rank}", rank != setup.lora_rank),
            )
            if changed
        ]
        if flags:
            variants.append(
                (" ".join(flags), replace(setup, checkpointing=ckpt, offload=off, lora_rank=rank))
            )
    out = []
    for label, changed in variants:
        fitting: dict[str, int] = {p.strategy: p.max_micro_batch for p in plan(changed, strategies) if p.fits}
        out.append(Alternative(flags=label, fits=fitting))
    return out


def applicable_hypotheses(setup: Setup, plans: list[StrategyPlan]) -> list[Applies]:
    """Catalog hypotheses that this setup can trigger, with the findings to watch."""
    out: list[Applies] = []
    accum = max(p.accum for p in plans)
    strategies = {p.strategy for p in plans}
    if setup.precision == "fp16":
        out.append(
            Applies(
                "precision",
                ("fp16-overflow", "fp16-no-scaler", "nonfinite"),
                "fp16 needs a GradScaler; its skipped steps and scale halvings show as "
                "loss plateaus and spikes.",
            )
        )
    else:
        out.append(
            Applies(
                "precision",
                ("nonfinite",),
                f"{setup.precision} has fp32's exponent range, so only NaN/Inf applies.",
            )
        )
    if setup.world > 1:
        out.append(
            Applies(
                "data-order",
                ("sampler-missing", "set-epoch-missing", "rank-data-skew"),
                f"{setup.world} ranks must each read a different shard every epoch.",
            )
        )
        out.append(
            Applies(
                "logging",
                ("rank0-only-loss-log",),
                "with several ranks, a loss logged on rank 0 alone is one micro-batch's view.",
            )
        )
    if accum > 1:
        out.append(
            Applies(
                "accumulation-sync",
                ("accum-no-sync-missing", "zero-grad-inside-accum", "accum-loss-unscaled", "accum-uneven"),
                f"{accum} micro-steps per optimizer step: the loss must be divided by {accum}, "
                "gradients zeroed once per step, and DDP's sync skipped until the last micro-step.",
            )
        )
        out.append(
            Applies(
                "lr-schedule",
                ("scheduler-per-microstep",),
                "with accumulation, the scheduler must step once per optimizer step.",
            )
        )
        out.append(
            Applies(
                "loss-normalization",
                ("loss-normalization-variable-tokens",),
                "averaging the loss per micro-batch weights tokens unequally when padding varies.",
            )
        )
    if "ddp" in strategies and setup.world > 1:
        out.append(
            Applies(
                "ddp-config",
                ("find-unused-true", "ddp-bucket-config"),
                "DDP's buckets copy every gradient (gradient_as_bucket_view=True saves that "
                "memory); with checkpointing, use use_reentrant=False rather than "
                "find_unused_parameters=True.",
            )
        )
    if "fsdp" in strategies:
        out.append(
            Applies(
                _group("fsdp-clip-wrong"),
                ("fsdp-clip-wrong",),
                "FSDP1 shards gradients: clip with model.clip_grad_norm_, not torch.nn.utils.",
            )
        )
    samples = max(p.global_batch_samples for p in plans)
    tokens = max(p.global_batch_tokens for p in plans)
    out.append(
        Applies(
            "batch-size",
            ("batch-below-noise-scale", "oscillation-within-noise"),
            f"effective batch {samples} samples ({tokens:,} tokens); `ddp-doctor run` compares "
            "it with the measured gradient noise scale.",
        )
    )
    return out


def _group(finding_id: str) -> str | None:
    groups = hypotheses_of(finding_id)
    return groups[0] if groups else None
