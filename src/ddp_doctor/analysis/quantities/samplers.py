"""Which DistributedSampler feeds the optimizer steps, and how its iterations went, epoch by epoch.

A script holds several samplers (train, val, test) and iterates one of them more than once per
epoch: ``next(iter(loader))`` peeks, re-created iterators, several DataLoaders on one sampler.
Each `sampler` record (probe/instruments/data.py) names its sampler (``sampler``: 0, 1, ... per
rank) and carries, for that sampler's *previous* iteration, the indices drawn from it
(``prev_drawn``) and the optimizer steps it fed (``prev_steps``: steps that closed while it was the
iteration drawn from last). From them:

* the sampler that feeds the optimizer steps: the most steps fed over all ranks; without that
  information (records of an older probe, or every sampler iterated once), the one that shuffles,
  then the one iterated most;
* its *training iterations*: those that fed at least one step, or whose count is unknown (the
  last iteration of a sampler: no later record carries it); an iteration that fed none (a peek,
  an iterator created and dropped) is set aside and counted.

Records without a sampler number (older probe) form one sampler, every iteration counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddp_doctor.rundir.reader import RunData


@dataclass
class Iteration:
    step: int | None
    epoch: int | None
    hash: Any
    n: int | None
    drawn: int | None  # indices drawn (None: unknown, the sampler's last iteration)
    fed: int | None  # optimizer steps fed (None: unknown)

    @property
    def trained(self) -> bool:
        return self.fed is None or self.fed > 0


@dataclass
class SamplerUse:
    """One sampler (the same number on every rank) and its iterations, rank by rank."""

    sampler: int | None
    shuffle: bool | None
    per_rank: dict[int, list[Iteration]] = field(default_factory=dict)

    @property
    def steps_fed(self) -> int:
        return sum(i.fed or 0 for its in self.per_rank.values() for i in its)

    @property
    def fed_known(self) -> bool:
        return any(i.fed is not None for its in self.per_rank.values() for i in its)

    @property
    def iterations(self) -> int:
        return max((len(its) for its in self.per_rank.values()), default=0)

    def training(self) -> dict[int, list[Iteration]]:
        return {r: [i for i in its if i.trained] for r, its in self.per_rank.items()}

    def set_aside(self) -> int:
        return max((sum(not i.trained for i in its) for its in self.per_rank.values()), default=0)

    def summary(self) -> dict[str, Any]:
        epochs = sorted({i.epoch for its in self.per_rank.values() for i in its if i.epoch is not None})
        return {
            "sampler": self.sampler,
            "shuffle": self.shuffle,
            "iterations": self.iterations,
            "training_iterations": max((len(v) for v in self.training().values()), default=0),
            "iterations_that_fed_no_step": self.set_aside(),
            "steps_fed": self.steps_fed if self.fed_known else None,
            "epoch_values_seen": epochs[:50],
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def sampler_uses(run: RunData) -> list[SamplerUse]:
    """Every sampler seen, in the order of its number."""
    uses: dict[int | None, SamplerUse] = {}
    for rank in sorted(run.ranks):
        data = run.ranks[rank]
        shuffle_of: dict[int | None, bool] = {}
        for cfg in data.configs:
            if cfg.get("what") == "sampler" and isinstance(cfg.get("shuffle"), bool):
                shuffle_of.setdefault(_int(cfg.get("sampler")), cfg["shuffle"])
        recs: dict[int | None, list[dict[str, Any]]] = {}
        for rec in data.sampler:
            if isinstance(rec, dict):
                recs.setdefault(_int(rec.get("sampler")), []).append(rec)
        for sid, its in recs.items():
            use = uses.setdefault(sid, SamplerUse(sid, None))
            shuffle = next((r["shuffle"] for r in its if isinstance(r.get("shuffle"), bool)), None)
            if use.shuffle is None:
                use.shuffle = shuffle if shuffle is not None else shuffle_of.get(sid)
            out = []
            for k, rec in enumerate(its):
                nxt = its[k + 1] if k + 1 < len(its) else {}
                out.append(
                    Iteration(
                        step=_int(rec.get("step")),
                        epoch=_int(rec.get("epoch")),
                        hash=rec.get("hash"),
                        n=_int(rec.get("n")),
                        drawn=_int(nxt.get("prev_drawn")),
                        fed=_int(nxt.get("prev_steps")),
                    )
                )
            use.per_rank[rank] = out
    return [uses[k] for k in sorted(uses, key=lambda s: (s is None, s or 0))]


def feeding(uses: list[SamplerUse]) -> tuple[SamplerUse | None, str]:
    """The sampler that feeds the optimizer steps, and how it was chosen."""
    if not uses:
        return None, "no sampler"
    if len(uses) == 1:
        return uses[0], "the only sampler"
    known = [u for u in uses if u.fed_known and u.steps_fed > 0]
    if known:
        best = max(known, key=lambda u: u.steps_fed)
        return best, f"fed {best.steps_fed} optimizer steps (rank sum), the most of {len(uses)} samplers"
    # a sampler known to have fed no step (a val loop drawn between training steps) is not a candidate
    candidates = [u for u in uses if not (u.fed_known and u.steps_fed == 0)] or uses
    shuffling = [u for u in candidates if u.shuffle]
    if len(shuffling) == 1:
        return shuffling[0], f"the only one of {len(uses)} samplers that shuffles and may feed the steps"
    pool = shuffling or candidates
    best = max(pool, key=lambda u: u.iterations)
    return best, f"iterated most often of {len(uses)} samplers (steps fed not recorded)"
