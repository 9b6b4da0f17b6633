"""Everything the checks read: the run as read, its aligned series and the measured quantities.

Quantities are computed once here so that two checks that need the same number (the loss spikes
for `loss-spike` and `warmup-short`, the noise band for `batch-size` and `logging`) agree on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddp_doctor.analysis.quantities.effective_batch import EffectiveBatch, effective_batch
from ddp_doctor.analysis.quantities.gns import GNS, gradient_noise_scale
from ddp_doctor.analysis.quantities.noise_band import NoiseBand, noise_band
from ddp_doctor.analysis.quantities.oscillation import Oscillation, oscillation
from ddp_doctor.analysis.quantities.ratios import Ratios, ratios
from ddp_doctor.analysis.quantities.series import Series, build_series, segment_sum
from ddp_doctor.analysis.quantities.sharding import global_sq, shard_replicas
from ddp_doctor.analysis.quantities.shards import combine_clip, combine_full, combine_grad_sq, is_fsdp2
from ddp_doctor.analysis.quantities.spikes import EARLY_LOSS_FACTOR, Spike, find_spikes
from ddp_doctor.analysis.quantities.update_ratio import UpdateRatios, update_ratios
from ddp_doctor.rundir.reader import CLIP_COLUMNS, RunData


@dataclass
class SyncPattern:
    """Where in the micro-steps gradient all-reduces happened, over all ranks' step records."""

    steps: int  # step records with ≥ 2 micro-steps
    steps_single: int  # step records with 1 micro-step
    total_syncs: int
    last_only: int  # multi-micro records: only the last micro-step synced
    every_micro: int  # multi-micro records: every micro-step synced
    last_unsynced: int  # multi-micro records: some micro-step synced, the last did not
    none: int  # records (any micro count) with no sync at all

    def gns_valid(self, series: Series) -> np.ndarray:
        """Steps whose local buffer holds the whole accumulated local gradient: sync only on the
        last micro-step (or one micro-step per optimizer step) throughout the run."""
        return np.full(series.n_steps, self.every_micro == 0 and self.last_unsynced == 0)


def sync_pattern(run: RunData) -> SyncPattern:
    steps = single = total = last_only = every = last_unsynced = none = 0
    for data in run.ranks.values():
        c = data.steps
        if c is None or not len(c):
            continue
        synced = (c.sync > 0).astype(np.float64)
        n_synced = segment_sum(synced, c.offsets)
        last = c.last_micro_index()
        # a rank whose step records hold no micro-step at all (damaged file) has nothing to index
        last_synced = (
            np.where(last >= 0, synced[np.clip(last, 0, synced.size - 1)] > 0, False)
            if synced.size
            else np.zeros(len(c), dtype=bool)
        )
        multi = c.micro_steps >= 2
        total += int(c.sync.sum())
        steps += int(multi.sum())
        single += int((c.micro_steps == 1).sum())
        none += int((n_synced == 0).sum())
        last_only += int((multi & last_synced & (n_synced == 1)).sum())
        every += int((multi & (n_synced == c.micro_steps)).sum())
        last_unsynced += int((multi & ~last_synced & (n_synced > 0)).sum())
    return SyncPattern(steps, single, total, last_only, every, last_unsynced, none)


@dataclass
class Context:
    run: RunData
    series: Series
    world_size: int
    batch: EffectiveBatch
    sync: SyncPattern
    gns: GNS
    noise: NoiseBand
    oscillation: Oscillation  # observed vs predicted step-to-step std of the global loss, with CI
    grad_norm: np.ndarray  # [T] global gradient norm (hook, else clip total_norm)
    grad_norm_source: str | None
    loss_spikes: list[Spike]
    grad_spikes: list[Spike]
    ratios: Ratios | None
    updates: UpdateRatios | None
    level: str

    def config(self, what: str) -> dict[str, Any] | None:
        return self.run.config(what)

    @property
    def optimizer_steps(self) -> int:
        """Optimizer steps in the step records read (the longest rank's)."""
        return max((len(d.steps) for d in self.run.ranks.values() if d.steps is not None), default=0)

    @property
    def steps_total(self) -> int:
        """Optimizer steps of the run: those read, or on the rollup path those the rollups count."""
        rollups = self.run.rollups
        return max(rollups.steps_total, self.optimizer_steps) if rollups is not None else self.optimizer_steps


def deepspeed_owns_weights(run: RunData) -> str | None:
    """Why per-parameter gradients and updates are not recorded on this run's DeepSpeed engine
    (ZeRO ≥ 1 or fp16/bf16: they live in the engine's flat partitions when its optimizer steps, so
    probe/instruments/deepspeed.py switches the unused-parameter, update and `full` records off);
    None otherwise."""
    ds = run.config("deepspeed")
    if not ds or not (ds.get("zero_stage") or ds.get("fp16") or ds.get("bf16")):
        return None
    how = (
        f"ZeRO stage {ds.get('zero_stage')}"
        if ds.get("zero_stage")
        else ("fp16" if ds.get("fp16") else "bf16")
    )
    return f"DeepSpeed engine with {how}: gradients and updated weights live in the engine's partitions"


# Gradient-norm spikes are judged against a rolling window (quantities/spikes.py, MIN_HISTORY);
# with fewer recorded norms than this the series is not used at all.
MIN_GRAD_NORM_STEPS = 10


def fsdp1_replicas(run: RunData) -> int | None:
    """FSDP1/HSDP shard replicas (quantities/sharding.py); None when unsharded or FSDP2, whose shards
    build_context already combined across ranks (quantities/shards.py)."""
    return None if is_fsdp2(run) else shard_replicas(run.config("fsdp"))


def _engine_grad_norm(run: RunData, series: Series) -> np.ndarray:
    """[T] the global norm a DeepSpeed engine reported (`grad_norm`; equal on every rank: the
    lowest rank that has a step's value gives it); nan on skipped (overflow) steps and elsewhere."""
    out = np.full(series.n_steps, np.nan)
    for rank in sorted(run.ranks, reverse=True):
        cols = run.ranks[rank].steps
        if cols is None or "grad_norm" not in cols.extra:
            continue
        at, on = series.pos(cols.step)
        ok = on & np.isfinite(cols.extra["grad_norm"]) & ~cols.skipped
        out[at[ok]] = cols.extra["grad_norm"][ok]
    return out


def _grad_norm(run: RunData, series: Series) -> tuple[np.ndarray, str | None]:
    with np.errstate(invalid="ignore"):
        g = (
            np.sqrt(global_sq(series.gsq_global, fsdp1_replicas(run)))
            if series.ranks
            else np.full(series.n_steps, np.nan)
        )
    g = np.where(np.isfinite(g), g, np.nan)
    if np.isfinite(g).sum() >= MIN_GRAD_NORM_STEPS:
        return g, "comm hook (all-reduced gradient)"
    engine = _engine_grad_norm(run, series)
    if np.isfinite(engine).sum() >= MIN_GRAD_NORM_STEPS:
        return engine, "DeepSpeed engine global gradient norm"
    clip = np.full(series.n_steps, np.nan)
    clip_step, clip_rows = combine_clip(run)
    at, ok = series.pos(clip_step)
    clip[at[ok]] = clip_rows[ok, CLIP_COLUMNS.index("total_norm")]
    if np.isfinite(clip).sum() >= MIN_GRAD_NORM_STEPS:
        return clip, "clip_grad_norm_ total_norm"
    return g, None


def at_steps(spikes: list[Spike], series: Series) -> list[Spike]:
    """Spikes found on the step axis's columns, with their step numbers (the same on a dense axis)."""
    if series.dense:
        return spikes
    return [dataclasses.replace(s, step=series.step_of(s.step)) for s in spikes]


def build_context(run: RunData) -> Context:
    series = build_series(run)
    if is_fsdp2(run):  # each rank recorded its shard: every consumer reads the global ‖g‖²
        series.gsq_global = combine_grad_sq(series.gsq_global)
    sync = sync_pattern(run)
    world = run.world_size
    gns = gradient_noise_scale(series, world, sync.gns_valid(series), fsdp1_replicas(run))
    grad_norm, source = _grad_norm(run, series)
    full = combine_full(run)
    updates = next(
        (run.ranks[r].records["update"] for r in sorted(run.ranks) if run.ranks[r].records.get("update")), []
    )
    level = str(
        run.manifest.get("level")
        or next((d.header.get("level") for d in run.ranks.values() if d.header), "basic")
    )
    loss = np.where(series.skipped, np.nan, series.global_loss)
    noise = noise_band(run, series)
    dof = (noise.micro_count - 1.0) if noise.micro_count is not None else np.zeros(series.n_steps)
    return Context(
        run=run,
        series=series,
        world_size=world,
        batch=effective_batch(series, world),
        sync=sync,
        gns=gns,
        noise=noise,
        oscillation=oscillation(
            loss,
            noise.predicted_trace,
            np.clip(dof, 0.0, None),
            noise.reason if not np.isfinite(noise.predicted_trace).any() else None,
        ),
        grad_norm=grad_norm,
        grad_norm_source=source,
        loss_spikes=at_steps(
            find_spikes(loss, early_factor=EARLY_LOSS_FACTOR, sigma=noise.predicted_trace), series
        ),
        grad_spikes=at_steps(find_spikes(grad_norm), series) if source else [],
        ratios=ratios(full),
        updates=update_ratios(updates, full),
        level=level,
    )
