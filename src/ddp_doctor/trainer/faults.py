"""Which pitfall does each `--fault NAME` switch reproduce?

Each switch makes the reference trainer commit one mistake from the forum thread the way real
training scripts commit it (the loop in `loop.py` branches on these names at the exact line where a
real script goes wrong). The catalog finding each fault should trigger is in `FAULT_FINDINGS`.
Plain data: no torch import.
"""

from __future__ import annotations

# Faults that need a DDP wrapper (replicated parameters, DDP's sync flag); FSDP shards instead.
DDP_ONLY_FAULTS: frozenset[str] = frozenset({"bypass-ddp", "sync-toggle-after-forward", "replica-desync"})

# lr-too-high: factor on the configured lr. Measured on the tiny preset (docs/trainer.md), AdamW,
# clip 1.0, 5 warmup steps: lr 3e-2 (x100 of 3e-4) still falls smoothly; lr 1e-1 sends the loss
# back ABOVE its random-init value (5.56 -> 6.16 nats) at the end of warmup. x300 -> 9e-2.
LR_TOO_HIGH_FACTOR = 300.0

FAULTS: dict[str, str] = {
    "no-sampler": "DataLoader(shuffle=True) with the same seed on every rank instead of a DistributedSampler: all ranks read the same samples.",
    "no-set-epoch": "DistributedSampler without sampler.set_epoch(epoch): the shuffled order repeats every epoch.",
    "loss-unscaled": "the loss passed to backward is not divided by the accumulation count (gradients are accum x too large).",
    "zero-grad-per-micro": "optimizer.zero_grad() inside the accumulation loop: only the last micro-batch's gradient survives.",
    "sched-per-micro": "lr_scheduler.step() once per micro-batch instead of once per optimizer step (warmup/decay run accum x too fast).",
    "sync-every-micro": "no model.no_sync() on non-final micro-steps: gradients are all-reduced every micro-step (same numbers, wasted bandwidth).",
    "sync-toggle-after-forward": "model.require_backward_grad_sync set after the forward pass, so each micro-step uses the previous one's setting: the final backward is not all-reduced.",
    "replica-desync": "one rank's parameters are perturbed at --fault-step (as a rank-local in-place update would); DDP never re-broadcasts, so replicas stay different.",
    "bypass-ddp": "forward through model.module(...) instead of the DDP wrapper: backward runs with no gradient all-reduce.",
    "clip-before-unscale": "clip_grad_norm_ on loss-scaled fp16 gradients without scaler.unscale_ first (implies --precision fp16).",
    "fp16-no-scaler": "float16 autocast without a GradScaler (implies --precision fp16).",
    "fp16-overflow": "GradScaler with an init scale so large and a growth interval so short that scaled gradients overflow and steps are skipped repeatedly (implies --precision fp16).",
    "nan-at-step": "rank 0's loss becomes NaN at --fault-step (a bad batch); the NaN spreads through the all-reduce.",
    "rank0-loss-log": "the logged training loss is rank 0's local loss instead of the all-reduced global one.",
    "per-microbatch-mean-loss": "each micro-batch's loss is its own token mean / accum, so micro-batches with few valid tokens get too much weight.",
    "lr-too-high": f"the learning rate is multiplied by {LR_TOO_HIGH_FACTOR:g} so that the loss spikes.",
}

# The catalog finding (ddp_doctor.core.catalog.FINDINGS) each fault is meant to trigger.
FAULT_FINDINGS: dict[str, str] = {
    "no-sampler": "sampler-missing",
    "no-set-epoch": "set-epoch-missing",
    "loss-unscaled": "accum-loss-unscaled",
    "zero-grad-per-micro": "zero-grad-inside-accum",
    "sched-per-micro": "scheduler-per-microstep",
    "sync-every-micro": "accum-no-sync-missing",
    "sync-toggle-after-forward": "no-sync-after-forward",
    "replica-desync": "replica-divergence",
    "bypass-ddp": "ddp-bypassed",
    "clip-before-unscale": "clip-before-unscale",
    "fp16-no-scaler": "fp16-no-scaler",
    "fp16-overflow": "fp16-overflow",
    "nan-at-step": "nonfinite",
    "rank0-loss-log": "rank0-only-loss-log",
    "per-microbatch-mean-loss": "loss-normalization-variable-tokens",
    "lr-too-high": "loss-spike",
}

# Faults that only exist in float16 mixed precision: asking for one switches precision to fp16.
FP16_FAULTS: frozenset[str] = frozenset({"clip-before-unscale", "fp16-no-scaler", "fp16-overflow"})

# fp16-overflow: GradScaler(init_scale, growth_interval). A scale of 2**32 overflows float16
# (max 65504) in the backward of the first step; growth_interval=1 doubles it again after every
# good step, so the scaler keeps alternating overflow / good step (the "scale keeps halving" trace).
FP16_OVERFLOW_INIT_SCALE = 2.0**32
FP16_OVERFLOW_GROWTH_INTERVAL = 1

# replica-desync: relative size of the perturbation added to the last rank's parameters.
REPLICA_DESYNC_SCALE = 1e-3


def check_faults(names: tuple[str, ...]) -> None:
    """Raise ValueError naming every unknown fault."""
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; choose from {', '.join(FAULTS)}")
