"""The stages of one optimizer step and the fingerprints a run recorded for them, read from a run dir.

A fingerprint (probe/instruments/fingerprints.py) is ``[Σx, Σx², Σ|x|, max|x|, x[i_0..i_3]]`` in
float64. Stages in the order one step runs them:

| stage     | what                                              | compared across world sizes as |
|-----------|---------------------------------------------------|--------------------------------|
| `param`   | θ before the update                               | every rank vs the reference    |
| `local`   | this rank's gradient after accumulation, before the all-reduce | mean over ranks of Σx and the samples (the linear components: what the all-reduce averages) |
| `reduced` | `.grad` after the step's last backward (DDP's averaged gradient) | every rank vs the reference; ranks vs each other; vs mean(`local`) within the run |
| `clipped` | `.grad` when the optimizer step starts (after unscale and clipping) | every rank vs the reference |
| `update`  | θ_after − θ_before                                | every rank vs the reference    |
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddp_doctor.rundir.reader import RunData, read_run

STAGES: tuple[str, ...] = ("param", "local", "reduced", "clipped", "update")
MERGED_RANK = -1  # the one "rank" of a sharded step whose shards were merged (merge_shards)
SUM, SUMSQ, L1, MAX = 0, 1, 2, 3
SAMPLE0 = 4


def _float(v: Any) -> float:
    if isinstance(v, bool):
        return math.nan
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)  # "nan", "inf", "-inf"
        except ValueError:
            return math.nan
    return math.nan


def _print(v: Any) -> list[float] | None:
    if not isinstance(v, list) or len(v) < 4:
        return None
    return [_float(x) for x in v[:8]]


def _row(v: Any, n: int) -> list[list[float] | None]:
    if not isinstance(v, list):
        return [None] * n
    return [_print(x) for x in v[:n]] + [None] * max(0, n - len(v))


@dataclass
class RankStep:
    """One rank's fingerprints of one optimizer step, each list indexed like `StepPrints.names`."""

    local: list[list[float] | None]  # after accumulation (the last micro-step's local read)
    reduced: list[list[float] | None]
    clipped: list[list[float] | None]
    param: list[list[float] | None]
    update: list[list[float] | None]
    micro_steps: int
    sample_hashes: list[str]

    def stage(self, name: str) -> list[list[float] | None]:
        value: list[list[float] | None] = getattr(self, name)
        return value


@dataclass
class StepPrints:
    step: int
    names: list[str]
    numel: list[int]
    dtype: list[str]
    ranks: dict[int, RankStep]
    sharded: bool = False  # FSDP2: each rank's prints are of its own shard (see merge_shards)


@dataclass
class StepFacts:
    """What the `step` records say about a step, per rank (for naming causes)."""

    sync: dict[int, list[int]] = field(default_factory=dict)
    zero_grad_after_backward: dict[int, int] = field(default_factory=dict)
    sched_steps: dict[int, int] = field(default_factory=dict)
    lr: dict[int, float] = field(default_factory=dict)
    tokens: dict[int, float] = field(default_factory=dict)
    samples: dict[int, int] = field(default_factory=dict)
    micro: dict[int, int] = field(default_factory=dict)
    autocast: str | None = None
    clip: dict[int, list[float]] = field(default_factory=dict)  # rank -> [max_norm, total_norm]


@dataclass
class RunPrints:
    path: Path
    world: int
    steps: dict[int, StepPrints]
    facts: dict[int, StepFacts]
    optimizer: str | None
    problems: list[str]
    # the lowest rank's first DistributedSampler (`config`/`sampler`: type, shuffle, seed, drop_last,
    # num_replicas, dataset_len); None: no DistributedSampler was iterated
    sampler: dict[str, Any] | None = None
    # only these ranks were read (`equiv --ranks A-B`); None: every rank of the run
    subset: tuple[int, int] | None = None

    @property
    def has_prints(self) -> bool:
        return bool(self.steps)


def from_run(run: RunData, subset: tuple[int, int] | None = None) -> RunPrints:
    steps: dict[int, StepPrints] = {}
    problems = list(run.problems)
    optimizer = None
    for rank, data in sorted(run.ranks.items()):
        opt = data.config("optimizer")
        if optimizer is None and opt is not None and isinstance(opt.get("type"), str):
            optimizer = opt["type"]
        for rec in data.records.get("fingerprint", []):
            step, names = rec.get("step"), rec.get("names")
            if not isinstance(step, int) or not isinstance(names, list):
                problems.append(f"rank {rank}: a fingerprint record without step or names")
                continue
            n = len(names)
            local = rec.get("local")
            micros = [m for m in local if isinstance(m, list)] if isinstance(local, list) else []
            entry = steps.setdefault(
                step,
                StepPrints(
                    step=step,
                    names=[str(x) for x in names],
                    numel=[int(x) if isinstance(x, int) else 0 for x in (rec.get("numel") or [])][:n],
                    dtype=[str(x) for x in (rec.get("dtype") or [])][:n],
                    ranks={},
                ),
            )
            entry.sharded = entry.sharded or rec.get("sharded") is True
            if entry.names != [str(x) for x in names]:
                problems.append(
                    f"rank {rank} step {step}: parameter names differ from rank {min(entry.ranks)}"
                )
                continue
            entry.ranks[rank] = RankStep(
                local=_row(micros[-1], n) if micros else [None] * n,
                reduced=_row(rec.get("reduced"), n),
                clipped=_row(rec.get("clipped"), n),
                param=_row(rec.get("param"), n),
                update=_row(rec.get("update"), n),
                micro_steps=len(micros),
                sample_hashes=[h for h in rec.get("sample_hashes") or [] if isinstance(h, str)],
            )
    return RunPrints(
        path=run.path,
        world=run.world_size,
        steps=steps,
        facts=_facts(run, set(steps)),
        optimizer=optimizer,
        problems=problems,
        sampler=_sampler(run),
        subset=subset,
    )


def _sampler(run: RunData) -> dict[str, Any] | None:
    for rank in sorted(run.ranks):
        for rec in run.ranks[rank].configs:
            if rec.get("what") == "sampler" and rec.get("sampler", 0) == 0:
                return rec
    return None


def _merge(prints: list[list[float] | None]) -> list[float] | None:
    """The fingerprint of a tensor from its shards' (Σx, Σx², Σ|x| add up; max|x| is the largest)."""
    if not prints or any(p is None for p in prints):
        return None
    full = [p for p in prints if p is not None]
    return [
        sum(p[SUM] for p in full),
        sum(p[SUMSQ] for p in full),
        sum(p[L1] for p in full),
        max(p[MAX] for p in full),
    ]


def merge_shards(step: StepPrints) -> StepPrints:
    """A sharded step (FSDP2) as one rank holding every full tensor: `param`, `reduced`, `clipped`
    and `update` merged from the ranks' shards (no samples: a shard has none); `local` is dropped
    (FSDP2 reduce-scatters inside the backward, so no per-rank local gradient of the full tensor is
    read); the sample hashes of every rank are kept, so the data check sees the whole global batch."""
    ranks = [step.ranks[r] for r in sorted(step.ranks)]
    n = len(step.names)
    merged = RankStep(
        local=[None] * n,
        reduced=[_merge([r.reduced[i] for r in ranks]) for i in range(n)],
        clipped=[_merge([r.clipped[i] for r in ranks]) for i in range(n)],
        param=[_merge([r.param[i] for r in ranks]) for i in range(n)],
        update=[_merge([r.update[i] for r in ranks]) for i in range(n)],
        micro_steps=max((r.micro_steps for r in ranks), default=0),
        sample_hashes=[h for r in ranks for h in r.sample_hashes],
    )
    return StepPrints(
        step.step, step.names, step.numel, step.dtype, {MERGED_RANK: merged} if ranks else {}, sharded=True
    )


def _facts(run: RunData, wanted: set[int]) -> dict[int, StepFacts]:
    out: dict[int, StepFacts] = {}
    for rank, data in run.ranks.items():
        cols = data.steps
        if cols is None:
            continue
        for i in range(len(cols)):
            step = int(cols.step[i])
            if step not in wanted:
                continue
            f = out.setdefault(step, StepFacts())
            lo, hi = int(cols.offsets[i]), int(cols.offsets[i + 1])
            f.sync[rank] = [int(x) for x in cols.sync[lo:hi]]
            f.micro[rank] = hi - lo
            zg = cols.extra.get("zero_grad_after_backward")
            if zg is not None and i < len(zg) and math.isfinite(float(zg[i])):
                f.zero_grad_after_backward[rank] = int(zg[i])
            f.sched_steps[rank] = int(cols.sched_steps[i])
            f.lr[rank] = float(cols.lr[i])
            tokens = cols.tokens[lo:hi]
            f.tokens[rank] = (
                float(tokens.sum()) if len(tokens) and not any(math.isnan(t) for t in tokens) else math.nan
            )
            f.samples[rank] = int(sum(int(s) for s in cols.samples[lo:hi] if s == s and s >= 0))
            if cols.autocast:
                f.autocast = sorted(cols.autocast)[0]
            for row, s in zip(cols.clip, cols.clip_step):
                if int(s) == step:
                    f.clip[rank] = [float(row[0]), float(row[1])]
    return out


def read(path: Path | str, ranks: tuple[int, int] | None = None) -> RunPrints:
    """A run directory's fingerprints (RunDirError when it is not a run); ``ranks``: only those."""
    return from_run(read_run(path, ranks=ranks, rollups="off"), ranks)  # every fingerprinted step, raw
