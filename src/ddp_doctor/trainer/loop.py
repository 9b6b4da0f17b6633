"""The reference training loop: one optimizer step done right, and each pitfall on request.

`build(cfg)` returns a `TrainState` (model wrapped for the strategy, AdamW, warmup+cosine
scheduler, GradScaler, sharded data); `train_step(state, micro_batches)` runs exactly one optimizer
step and leaves the gradients in `param.grad`; `train(cfg)` loops. They work inside an initialised
process group (DDP / ZeRO-1 / FSDP2 over it) or without one (a single process, no wrapper) — the
single-process path is the reference the equivalence tests compare DDP against.

One optimizer step, done right:
  1. N = global count of valid targets over all micro-batches of all ranks (one all-reduce).
  2. For each micro-batch: loss = sum of token cross-entropies * W / N, where W = world size,
     because DDP/FSDP *average* gradients over ranks; the result is grad(sum CE / N) exactly.
     Non-final micro-steps run under `no_sync()` so gradients are all-reduced once.
  3. Unscale (fp16), clip, optimizer.step(), scheduler.step() once, log the all-reduced loss.
Faults (faults.py) change exactly the line a real script gets wrong; each is marked `# fault:`.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from ddp_doctor.trainer.config import METRICS_FILE, TrainConfig
from ddp_doctor.trainer.data import dataset_for
from ddp_doctor.trainer.faults import (
    FP16_OVERFLOW_GROWTH_INTERVAL,
    FP16_OVERFLOW_INIT_SCALE,
    LR_TOO_HIGH_FACTOR,
    REPLICA_DESYNC_SCALE,
)
from ddp_doctor.trainer.model import build_model, token_loss_sum, valid_tokens

Batch = dict[str, torch.Tensor]


@dataclass
class TrainState:
    """Everything one rank needs to run optimizer steps."""

    cfg: TrainConfig
    model: nn.Module  # what forward is called on: DDP / FSDP / compiled wrapper, or the raw model
    raw_model: nn.Module  # the LlamaForCausalLM itself (sharded in place under FSDP)
    ddp: DDP | None  # the DDP wrapper, for no_sync / require_backward_grad_sync / .module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler | None
    loader: DataLoader[dict[str, torch.Tensor]]
    sampler: DistributedSampler[dict[str, torch.Tensor]] | None
    rank: int
    world_size: int
    device: torch.device
    autocast_dtype: torch.dtype | None
    step: int = 0  # optimizer steps taken
    epoch: int = 0
    _batches: Iterator[Batch] | None = None


@dataclass
class StepResult:
    """What one optimizer step measured (same value on every rank unless stated)."""

    loss: float  # all-reduced: sum of CE over all ranks / global valid tokens
    logged_loss: float  # what the trainer logs (rank-local under the rank0-loss-log fault)
    grad_norm: float  # global gradient norm before clipping (after unscaling, if fp16)
    lr: float  # learning rate the optimizer stepped with
    tokens: int  # global valid tokens in this optimizer step
    skipped: bool = False  # GradScaler skipped the step (inf/NaN gradients)
    loss_scale: float | None = None


@dataclass
class TrainResult:
    steps: list[StepResult]
    model: nn.Module  # the raw, trained LlamaForCausalLM of this rank
    state: TrainState
    seconds: float  # wall time of the optimizer steps (build excluded)
    step_seconds: list[float] = field(default_factory=list)

    @property
    def losses(self) -> list[float]:
        return [s.loss for s in self.steps]


def lr_lambda(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warmup over `warmup` steps, then cosine from 1 to `min_ratio` at `total` steps."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def _autocast_dtype(cfg: TrainConfig, device: torch.device) -> torch.dtype | None:
    """Autocast dtype for the precision, failing clearly where this device cannot run it."""
    if cfg.precision == "fp32":
        return None
    dtype = torch.bfloat16 if cfg.precision == "bf16" else torch.float16
    if not torch.amp.autocast_mode.is_autocast_available(device.type):
        raise RuntimeError(f"autocast is not available on {device.type}; use --precision fp32")
    # torch 2.13 CPU supports both float16 and bfloat16 autocast (measured, docs/trainer.md); older
    # builds reject float16 on CPU, which we turn into a clear message instead of a silent fallback.
    try:
        with torch.autocast(device.type, dtype=dtype):
            torch.ones(2, 2, device=device) @ torch.ones(2, 2, device=device)
    except RuntimeError as err:
        raise RuntimeError(
            f"{cfg.precision} autocast is not supported on {device.type} by torch {torch.__version__}: {err}"
        ) from err
    return dtype


def _wrap(cfg: TrainConfig, model: nn.Module, device: torch.device) -> tuple[nn.Module, DDP | None]:
    """Wrap for the strategy (nothing without a process group), compiling before or after."""
    if cfg.compile == "before_ddp":
        model = cast(nn.Module, torch.compile(model))  # an OptimizedModule for a Module
    ddp: DDP | None = None
    if dist.is_initialized() and dist.get_world_size() > 1:
        if cfg.strategy == "fsdp":
            from torch.distributed.fsdp import fully_shard

            for layer in model.model.layers:  # type: ignore[union-attr]
                fully_shard(layer)
            fully_shard(model)
        else:
            ddp = DDP(
                model,
                device_ids=[device.index] if device.type == "cuda" else None,
                bucket_cap_mb=cfg.bucket_cap_mb,
                find_unused_parameters=cfg.find_unused_parameters,
                gradient_as_bucket_view=cfg.gradient_as_bucket_view,
                static_graph=cfg.static_graph,
            )
            model = ddp
    if cfg.compile == "after_ddp":
        model = cast(nn.Module, torch.compile(model))  # an OptimizedModule for a Module
    return model, ddp


def _optimizer(cfg: TrainConfig, model: nn.Module) -> torch.optim.Optimizer:
    lr = cfg.lr * (LR_TOO_HIGH_FACTOR if cfg.has("lr-too-high") else 1.0)  # fault: lr-too-high
    params = [p for p in model.parameters() if p.requires_grad]
    kwargs: dict[str, Any] = dict(
        lr=lr, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps, weight_decay=cfg.weight_decay
    )
    if cfg.strategy == "zero1" and dist.is_initialized() and dist.get_world_size() > 1:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW, **kwargs)
    return torch.optim.AdamW(params, **kwargs)


def _scaler(cfg: TrainConfig, device: torch.device) -> torch.amp.GradScaler | None:
    if cfg.precision != "fp16" or cfg.has("fp16-no-scaler"):  # fault: fp16-no-scaler
        return None
    if cfg.has("fp16-overflow"):  # fault: a scale that overflows float16 and keeps growing back
        return torch.amp.GradScaler(
            device.type, init_scale=FP16_OVERFLOW_INIT_SCALE, growth_interval=FP16_OVERFLOW_GROWTH_INTERVAL
        )
    return torch.amp.GradScaler(device.type)


def _data(
    cfg: TrainConfig, rank: int, world: int
) -> tuple[DataLoader[dict[str, torch.Tensor]], DistributedSampler[dict[str, torch.Tensor]] | None]:
    dataset = dataset_for(cfg)
    if cfg.has("no-sampler"):
        # fault: the single-GPU loader kept under DDP; every rank seeds alike, so reads alike.
        generator = torch.Generator().manual_seed(cfg.seed)
        return DataLoader(
            dataset, batch_size=cfg.micro_batch, shuffle=True, drop_last=True, generator=generator
        ), None
    sampler: DistributedSampler[dict[str, torch.Tensor]] = DistributedSampler(
        dataset, num_replicas=world, rank=rank, shuffle=True, seed=cfg.seed, drop_last=True
    )
    return DataLoader(dataset, batch_size=cfg.micro_batch, sampler=sampler, drop_last=True), sampler


def build(cfg: TrainConfig) -> TrainState:
    """Model, optimizer, scheduler, scaler and data for this rank (single process without a group)."""
    distributed = dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    if torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    raw = build_model(cfg).to(device)
    model, ddp = _wrap(cfg, raw, device)
    optimizer = _optimizer(cfg, raw)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, partial(lr_lambda, warmup=cfg.warmup_steps, total=cfg.steps, min_ratio=cfg.min_lr_ratio)
    )
    loader, sampler = _data(cfg, rank, world)
    return TrainState(
        cfg=cfg,
        model=model,
        raw_model=raw,
        ddp=ddp,
        optimizer=optimizer,
        scheduler=scheduler,
        scaler=_scaler(cfg, device),
        loader=loader,
        sampler=sampler,
        rank=rank,
        world_size=world,
        device=device,
        autocast_dtype=_autocast_dtype(cfg, device),
    )


def _start_epoch(state: TrainState) -> None:
    if state.sampler is not None and not state.cfg.has("no-set-epoch"):  # fault: no-set-epoch
        state.sampler.set_epoch(state.epoch)
    state._batches = iter(state.loader)


def next_micro_batches(state: TrainState) -> list[Batch]:
    """This rank's `accum` micro-batches for the next optimizer step, starting new epochs as needed."""
    if state._batches is None:
        _start_epoch(state)
    batches: list[Batch] = []
    while len(batches) < state.cfg.accum:
        try:
            batches.append(next(state._batches))  # type: ignore[arg-type]
        except StopIteration:
            state.epoch += 1
            _start_epoch(state)
    return batches


def _all_reduce_sum(t: torch.Tensor, state: TrainState) -> torch.Tensor:
    if state.world_size > 1:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def _sync_context(state: TrainState, last: bool) -> contextlib.AbstractContextManager[Any]:
    """Gradient sync only on the final micro-step (DDP no_sync; FSDP2 set_requires_gradient_sync)."""
    cfg = state.cfg
    if state.world_size == 1 or cfg.has("sync-every-micro"):  # fault: sync-every-micro
        return contextlib.nullcontext()
    if cfg.has("sync-toggle-after-forward"):  # toggled by hand after the forward, see train_step
        return contextlib.nullcontext()
    if state.ddp is not None:
        return contextlib.nullcontext() if last else state.ddp.no_sync()
    if hasattr(state.raw_model, "set_requires_gradient_sync"):  # FSDP2
        state.raw_model.set_requires_gradient_sync(last)  # type: ignore[operator]  # FSDPModule's method
    return contextlib.nullcontext()


def _perturb_replica(state: TrainState) -> None:
    """fault: replica-desync — an in-place update on one rank only (e.g. a rank-local re-init)."""
    if state.world_size > 1 and state.rank == state.world_size - 1:
        generator = torch.Generator().manual_seed(state.cfg.seed + 1)
        with torch.no_grad():
            for p in state.raw_model.parameters():
                noise = torch.randn(p.shape, generator=generator).to(p.device, p.dtype)
                p.add_(noise * REPLICA_DESYNC_SCALE * p.detach().abs().mean())


def _norm(t: torch.Tensor) -> float:
    return float(t.full_tensor() if hasattr(t, "full_tensor") else t)  # FSDP2 returns a DTensor


def train_step(state: TrainState, micro_batches: Sequence[Batch]) -> StepResult:
    """Run one optimizer step on this rank's micro-batches; gradients stay in `param.grad`."""
    cfg, model, optimizer, scaler = state.cfg, state.model, state.optimizer, state.scaler
    at_fault_step = cfg.fault_step == state.step
    if cfg.has("replica-desync") and at_fault_step:
        _perturb_replica(state)
    params = [p for p in state.raw_model.parameters() if p.requires_grad]
    optimizer.zero_grad(set_to_none=True)

    # Counts and loss sums live on the device: NCCL cannot all-reduce CPU tensors.
    counts = [valid_tokens(b["labels"]).to(state.device) for b in micro_batches]
    local_tokens = torch.stack(counts).sum().to(torch.float64)
    global_tokens = _all_reduce_sum(local_tokens.clone(), state)
    ce_local = torch.zeros((), dtype=torch.float64, device=state.device)
    autocast = (
        torch.autocast(state.device.type, dtype=state.autocast_dtype)
        if state.autocast_dtype is not None
        else contextlib.nullcontext()
    )

    for i, batch in enumerate(micro_batches):
        last = i == len(micro_batches) - 1
        if cfg.has("zero-grad-per-micro"):  # fault: zeroing inside the accumulation loop
            optimizer.zero_grad(set_to_none=True)
        input_ids = batch["input_ids"].to(state.device)
        labels = batch["labels"].to(state.device)
        with _sync_context(state, last):
            with autocast:
                # fault: bypass-ddp calls the wrapped module directly, so DDP never hooks backward.
                forward = state.ddp.module if cfg.has("bypass-ddp") and state.ddp else model
                ce_sum = token_loss_sum(forward(input_ids=input_ids).logits, labels)
            if cfg.has("sync-toggle-after-forward") and state.ddp is not None:
                # fault: too late — DDP read this flag in the forward above.
                state.ddp.require_backward_grad_sync = last
            if cfg.has("nan-at-step") and at_fault_step and state.rank == 0 and i == 0:
                ce_sum = ce_sum * float("nan")  # fault: a bad batch on rank 0
            if cfg.has("per-microbatch-mean-loss"):
                # fault: each micro-batch averaged over its own tokens, then over micro-steps.
                loss = ce_sum / counts[i] / cfg.accum
            else:
                loss = ce_sum * state.world_size / global_tokens.to(torch.float32)
            if cfg.has("loss-unscaled"):  # fault: the division by the accumulation count forgotten
                loss = loss * cfg.accum
            (scaler.scale(loss) if scaler is not None else loss).backward()
        ce_local += ce_sum.detach().to(torch.float64)
        if cfg.has("sched-per-micro"):  # fault: the scheduler stepped with every micro-batch
            state.scheduler.step()

    lr = optimizer.param_groups[0]["lr"]
    scale_before = scaler.get_scale() if scaler is not None else None
    if scaler is not None and not cfg.has("clip-before-unscale"):
        scaler.unscale_(optimizer)
    # fault: clip-before-unscale clips the scaled gradients (no scaler.unscale_ before it).
    if cfg.clip is not None:
        grad_norm = _norm(torch.nn.utils.clip_grad_norm_(params, cfg.clip))
    else:
        grad_norm = _norm(torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None]))
    skipped = False
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
        skipped = scale_before is not None and scaler.get_scale() < scale_before
    else:
        optimizer.step()
    if not cfg.has("sched-per-micro"):
        state.scheduler.step()
    state.step += 1

    ce_global = _all_reduce_sum(ce_local.clone(), state)
    loss_value = float(ce_global / global_tokens)
    logged = loss_value
    if cfg.has("rank0-loss-log"):  # fault: log this rank's own loss, never all-reduced
        logged = float(ce_local / local_tokens)
    return StepResult(
        loss=loss_value,
        logged_loss=logged,
        grad_norm=grad_norm,
        lr=lr,
        tokens=int(global_tokens),
        skipped=skipped,
        loss_scale=scaler.get_scale() if scaler is not None else None,
    )


class _MetricsWriter:
    """rank 0's metrics.jsonl: one JSON line per logged optimizer step (NaN written as "nan")."""

    def __init__(self, out_dir: str | None, rank: int) -> None:
        self.file = None
        if out_dir is not None and rank == 0:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            from ddp_doctor.core.safe_io import open_append

            self.file = open_append(Path(out_dir) / METRICS_FILE)  # closed in close()

    def write(self, record: dict[str, Any]) -> None:
        if self.file is None:
            return
        clean = {
            k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()
        }
        self.file.write(json.dumps(clean) + "\n")
        self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def train(cfg: TrainConfig) -> TrainResult:
    """Train for cfg.steps optimizer steps; rank 0 writes metrics.jsonl and shows progress."""
    state = build(cfg)
    writer = _MetricsWriter(cfg.out_dir, state.rank)
    show = cfg.progress and state.rank == 0 and sys.stdout.isatty()
    progress = None
    if show:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(
            TextColumn("training"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
        )
        task = progress.add_task("", total=cfg.steps)
        progress.start()
    results: list[StepResult] = []
    step_seconds: list[float] = []
    start = time.perf_counter()
    try:
        for _ in range(cfg.steps):
            batches = next_micro_batches(state)
            t0 = time.perf_counter()
            result = train_step(state, batches)
            step_seconds.append(time.perf_counter() - t0)
            results.append(result)
            if (state.step - 1) % cfg.log_every == 0 or state.step == cfg.steps:
                writer.write(
                    {
                        "step": state.step - 1,
                        "loss": result.logged_loss,
                        "lr": result.lr,
                        "grad_norm": result.grad_norm,
                        "tokens": result.tokens,
                        "samples": cfg.micro_batch * cfg.accum * state.world_size,
                        "epoch": state.epoch,
                        "skipped": result.skipped,
                        "loss_scale": result.loss_scale,
                        "time": step_seconds[-1],
                        "elapsed": time.perf_counter() - start,
                    }
                )
            if progress is not None:
                progress.update(task, advance=1, description=f"loss {result.logged_loss:.3f}")
    finally:
        if progress is not None:
            progress.stop()
        writer.close()
    return TrainResult(
        steps=results,
        model=state.raw_model,
        state=state,
        seconds=time.perf_counter() - start,
        step_seconds=step_seconds,
    )
