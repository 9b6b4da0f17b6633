"""Compare two runs' fingerprints stage by stage: the first stage and parameters that differ, the ratio,
the catalog causes it points to, and whether the data (the global batch of each step) was the same.

Verdicts: ``equivalent`` (every stage of every fingerprinted step within the tolerance, same data),
``break`` (a stage differs beyond it: the first one is named), ``undecided`` (no fingerprints, or the
data differs before any stage broke: then no stage after it is judged, since different data makes
different gradients without any bug). Exit codes 0 / 1 / 2 (docs/equivalence.md).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ddp_doctor.equiv.stages import (
    L1,
    MAX,
    SAMPLE0,
    STAGES,
    SUM,
    SUMSQ,
    RankStep,
    RunPrints,
    StepFacts,
    StepPrints,
    merge_shards,
)
from ddp_doctor.equiv.tolerance import RunShape, Tolerance, tolerance

Verdict = Literal["equivalent", "break", "undecided"]
EXIT_CODES: dict[str, int] = {"equivalent": 0, "break": 1, "undecided": 2}
# A stage whose differing parameters all carry one ratio within this spread is "a scaled copy".
RATIO_SPREAD = 0.02
# A ratio names a factor (×N, ×accum, …) when within this relative distance of it.
FACTOR_MATCH = 0.02
Pair = tuple[str, int | None, list[float], list[float]]  # (parameter, rank compared, reference, value)
MAX_SHOWN = 5  # differing parameters listed per stage
UNEXPLAINED = "unexplained"
# Causes issue 25 part 2 adds to the catalog (branch catalog25); printed as bare IDs until then.
PENDING_IDS = frozenset({"grads-not-synced", "grad-scale-wrong", "loss-norm-per-rank-tokens"})
COMPONENTS = ("sum", "norm", "l1", "max", "sample")


@dataclass
class ParamDiff:
    name: str
    rank: int | None  # the rank of the run compared (None: the mean over ranks)
    component: str
    reference: float
    value: float
    relative: float  # |value − reference| / the tensor's scale
    ratio: float | None  # value / reference, for a scaled copy


@dataclass
class StageResult:
    step: int
    stage: str
    status: Literal["equal", "differs", "not recorded", "not judged"]
    tolerance: float
    worst: float  # max relative difference over the parameters compared
    compared: int
    differing: int
    shown: list[ParamDiff] = field(default_factory=list)
    ratio: float | None = None
    factor: list[str] = field(default_factory=list)  # names of the factor the ratio equals
    causes: list[str] = field(default_factory=list)
    note: str = ""  # what in particular differs (e.g. "ranks of B disagree")


@dataclass
class DataCheck:
    step: int
    # "subset": B was read as a subset of its ranks (--ranks) and every sample they read is in A's
    # global batch (consistent; the rest of B's batch is not read)
    status: Literal["same", "differs", "not recorded", "subset"]
    samples_a: int
    samples_b: int
    only_a: int  # samples (by hash) in A's global batch and not in B's
    only_b: int
    repeats_a: int = 0  # samples whose hash occurs more than once in A's global batch (extra copies)
    repeats_b: int = 0


@dataclass
class DataReason:
    """Why the global batches differ, read from the runs' samplers and hashes (render.py words it).

    ``code``: ``no_sampler`` (a run iterated no DistributedSampler: a custom, per-rank-seeded or
    plain sampler), ``custom_sampler`` (a DistributedSampler subclass), ``sampler_setting`` (shuffle,
    seed or drop_last differ), ``padding`` (len % W ≠ 0 without drop_last: the first indices
    repeated), ``drop_tail`` (len % W ≠ 0 with drop_last), ``epoch_length`` (the epochs hold a
    different number of samples, so the boundary falls at another step), ``repeats`` (a sample
    occurs twice in one global batch), ``batch_size`` (the global batches differ in size),
    ``unexplained`` (none of these)."""

    code: str
    run: str = ""  # "A", "B" or "" (both)
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class Equivalence:
    run_a: str
    run_b: str
    world_a: int
    world_b: int
    steps: list[int]
    tolerances: dict[int, Tolerance]
    data: list[DataCheck]
    stages: list[StageResult]
    verdict: Verdict
    first_break: StageResult | None
    data_differs_at: int | None
    problems: list[str]
    # why the data differs at data_differs_at (empty when it does not)
    data_reasons: list[DataReason] = field(default_factory=list)
    # per step: each run's clip call (rank 0's): max_norm, total norm, coefficient min(1, max/(total+1e-6))
    clip: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["tolerances"] = {
            str(k): {
                "grad": t.grad,
                "update": t.update,
                "adam": t.adam,
                "n_a": t.a.n,
                "n_b": t.b.n,
                "u_a": t.a.u,
                "u_b": t.b.u,
                "formula": t.formula(),
            }
            for k, t in self.tolerances.items()
        }
        out["exit_code"] = self.exit_code
        clean: dict[str, Any] = _finite(out)
        return clean


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# --- comparing fingerprints ---------------------------------------------------------------------


def _rel(a: float, b: float, scale: float) -> float:
    if math.isnan(a) and math.isnan(b):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0 if a == b else math.inf
    diff = abs(a - b)
    if diff == 0:
        return 0.0
    return diff / scale if scale > 0 and math.isfinite(scale) else math.inf


def compare_full(a: list[float], b: list[float]) -> list[tuple[str, float, float, float]]:
    """(component, a, b, relative difference) of every component, each relative to the tensor's scale."""
    big = max(abs(a[MAX]), abs(b[MAX]))
    norm_a, norm_b = math.sqrt(max(a[SUMSQ], 0.0)), math.sqrt(max(b[SUMSQ], 0.0))
    out = [
        ("sum", a[SUM], b[SUM], _rel(a[SUM], b[SUM], max(a[L1], b[L1]))),
        ("norm", norm_a, norm_b, _rel(norm_a, norm_b, max(norm_a, norm_b))),
        ("l1", a[L1], b[L1], _rel(a[L1], b[L1], max(a[L1], b[L1]))),
        ("max", a[MAX], b[MAX], _rel(a[MAX], b[MAX], big)),
    ]
    out += [("sample", x, y, _rel(x, y, big)) for x, y in zip(a[SAMPLE0:], b[SAMPLE0:])]
    return out


def compare_linear(a: list[float], b: list[float]) -> list[tuple[str, float, float, float]]:
    """Only Σx and the samples: the components a mean over ranks preserves."""
    big = max(abs(a[MAX]), abs(b[MAX]))
    out = [("sum", a[SUM], b[SUM], _rel(a[SUM], b[SUM], max(a[L1], b[L1])))]
    out += [("sample", x, y, _rel(x, y, big)) for x, y in zip(a[SAMPLE0:], b[SAMPLE0:])]
    return out


def mean_print(prints: list[list[float]]) -> list[float]:
    """The fingerprint of the mean over ranks, where it is defined: Σx and the samples are linear;
    Σ|x| and max|x| are replaced by their means over ranks (a scale, not the mean tensor's value)."""
    n = len(prints)
    width = min(len(p) for p in prints)
    out = [sum(p[i] for p in prints) / n for i in range(width)]
    out[SUMSQ] = math.nan
    return out


def scale_ratio(a: list[float], b: list[float], linear: bool) -> float | None:
    """r with b ≈ r·a: from the norms (full) or a least-squares fit of the linear components."""
    if linear:
        xs = [a[SUM], *a[SAMPLE0:]]
        ys = [b[SUM], *b[SAMPLE0:]]
        den = sum(x * x for x in xs)
        if not den or not all(math.isfinite(v) for v in xs + ys):
            return None
        return sum(x * y for x, y in zip(xs, ys)) / den
    if a[SUMSQ] <= 0 or not math.isfinite(a[SUMSQ]) or not math.isfinite(b[SUMSQ]):
        return None
    r = math.sqrt(max(b[SUMSQ], 0.0) / a[SUMSQ])
    dot = a[SUM] * b[SUM] + sum(x * y for x, y in zip(a[SAMPLE0:], b[SAMPLE0:]))
    return -r if dot < 0 else r


def is_scaled_copy(a: list[float], b: list[float], r: float, linear: bool, tol: float) -> bool:
    """b ≈ r·a within max(tol, 1e-3) of b's scale, component by component."""
    scaled = [v * r for v in a]
    scaled[SUMSQ] = a[SUMSQ] * r * r
    scaled[L1] = a[L1] * abs(r)
    scaled[MAX] = a[MAX] * abs(r)
    rows = compare_linear(scaled, b) if linear else compare_full(scaled, b)
    return all(rel <= max(tol, 1e-3) for _, _, _, rel in rows)


# --- naming a ratio ---------------------------------------------------------------------------


def factors(ratio: float, shape_a: RunShape, shape_b: RunShape) -> list[tuple[str, list[str]]]:
    """The factors (label, catalog causes) that `ratio` equals within FACTOR_MATCH."""
    n = shape_b.world / shape_a.world
    acc = shape_b.accum / shape_a.accum
    candidates: list[tuple[str, float, list[str]]] = []
    if n != 1:
        candidates += [
            (f"×N (N = {n:g})", n, ["grad-scale-wrong"]),
            (f"×1/N (N = {n:g})", 1 / n, ["grad-scale-wrong"]),
        ]
    if acc != 1:
        candidates += [
            (f"×accum_B/accum_A ({shape_b.accum}/{shape_a.accum})", acc, ["accum-loss-unscaled"]),
            (f"×accum_A/accum_B ({shape_a.accum}/{shape_b.accum})", 1 / acc, ["accum-loss-unscaled"]),
        ]
    if shape_b.accum > 1:
        candidates += [
            (f"×accum_B ({shape_b.accum})", float(shape_b.accum), ["accum-loss-unscaled"]),
            (f"×1/accum_B ({shape_b.accum})", 1 / shape_b.accum, ["accum-loss-unscaled"]),
        ]
    if shape_b.world > 1:
        candidates += [
            (f"×W_B ({shape_b.world})", float(shape_b.world), ["grad-scale-wrong"]),
            (f"×1/W_B ({shape_b.world})", 1 / shape_b.world, ["grad-scale-wrong"]),
        ]
    # generic factors last: named only when no factor of the runs' shapes has the same value
    generic = [("×2", 2.0, ["grad-scale-wrong"]), ("×1/2", 0.5, ["grad-scale-wrong"]), ("×−1", -1.0, [])]
    out: list[tuple[str, list[str]]] = []
    seen: set[float] = set()
    for label, value, causes in candidates + [(g[0], g[1], g[2] + ["generic"]) for g in generic]:
        if abs(ratio - value) <= FACTOR_MATCH * abs(value):
            if "generic" in causes and value in seen:
                continue
            seen.add(value)
            out.append((label, [c for c in causes if c != "generic"]))
    return out


# --- the comparison -----------------------------------------------------------------------------


def _shape(run: RunPrints, step: StepPrints, facts: StepFacts | None) -> RunShape:
    accum = max((r.micro_steps for r in step.ranks.values()), default=1)
    tokens = sum(facts.tokens.values()) if facts is not None and facts.tokens else math.nan
    samples = sum(facts.samples.values()) if facts is not None and facts.samples else 0
    if facts is not None and facts.micro:
        accum = max(accum, max(facts.micro.values()))
    terms = int(tokens) if math.isfinite(tokens) and tokens > 0 else max(samples, 1)
    if run.subset is not None and step.ranks:  # the ranks read stand for all: T scales with W
        terms = max(1, round(terms * run.world / len(step.ranks)))
    dtype = Counter(step.dtype).most_common(1)[0][0] if step.dtype else "float32"
    return RunShape(
        world=run.world,
        accum=accum,
        loss_terms=terms,
        dtype=dtype,
        compute_dtype=facts.autocast if facts else None,
    )


def _data_check(step: int, a: StepPrints | None, b: StepPrints | None, b_subset: bool = False) -> DataCheck:
    ha = Counter(h for r in (a.ranks.values() if a else []) for h in r.sample_hashes)
    hb = Counter(h for r in (b.ranks.values() if b else []) for h in r.sample_hashes)
    na, nb = sum(ha.values()), sum(hb.values())
    if not na or not nb:
        return DataCheck(step, "not recorded", na, nb, 0, 0)
    only_a, only_b = sum((ha - hb).values()), sum((hb - ha).values())
    if b_subset:  # B's other ranks were not read: only "B's samples are among A's" can be checked
        return DataCheck(step, "differs" if only_b else "subset", na, nb, 0, only_b, repeats_b=nb - len(hb))
    return DataCheck(
        step, "same" if not only_a and not only_b else "differs", na, nb, only_a, only_b,
        repeats_a=na - len(ha), repeats_b=nb - len(hb),
    )  # fmt: skip


def _epoch_samples(sampler: dict[str, Any], world: int) -> int | None:
    """Samples one epoch of a DistributedSampler gives all ranks together (padded or dropped)."""
    n = sampler.get("dataset_len")
    w = sampler.get("num_replicas") if isinstance(sampler.get("num_replicas"), int) else world
    if not isinstance(n, int) or not isinstance(w, int) or w < 1:
        return None
    return (n // w) * w if sampler.get("drop_last") else -(-n // w) * w


def data_reasons(a: RunPrints, b: RunPrints, check: DataCheck) -> list[DataReason]:
    """Why the global batches of ``check.step`` differ (DistributedSampler's argument, docs/equivalence.md)."""
    out: list[DataReason] = []
    for name, run in (("A", a), ("B", b)):
        if run.sampler is None:
            out.append(DataReason("no_sampler", name, {"world": run.world}))
        elif run.sampler.get("type") not in (None, "DistributedSampler"):
            out.append(DataReason("custom_sampler", name, {"type": run.sampler.get("type")}))
    if a.sampler is not None and b.sampler is not None:
        for key in ("shuffle", "seed", "drop_last"):
            va, vb = a.sampler.get(key), b.sampler.get(key)
            if va != vb:
                out.append(DataReason("sampler_setting", "", {"setting": key, "a": va, "b": vb}))
    for name, run in (("A", a), ("B", b)):
        s = run.sampler
        if s is None or not isinstance(s.get("dataset_len"), int):
            continue
        n = int(s["dataset_len"])
        w = int(s["num_replicas"]) if isinstance(s.get("num_replicas"), int) else run.world
        if w > 1 and n % w:
            if s.get("drop_last"):
                out.append(DataReason("drop_tail", name, {"n": n, "w": w, "dropped": n % w}))
            else:
                out.append(DataReason("padding", name, {"n": n, "w": w, "padded": w - n % w}))
    if a.sampler is not None and b.sampler is not None:
        ea, eb = _epoch_samples(a.sampler, a.world), _epoch_samples(b.sampler, b.world)
        if ea is not None and eb is not None and ea != eb:
            out.append(DataReason("epoch_length", "", {"a": ea, "b": eb}))
    for name, repeats in (("A", check.repeats_a), ("B", check.repeats_b)):
        if repeats:
            out.append(DataReason("repeats", name, {"step": check.step, "repeats": repeats}))
    if check.samples_a != check.samples_b:
        out.append(DataReason("batch_size", "", {"a": check.samples_a, "b": check.samples_b}))
    return out or [DataReason("unexplained")]


def _judge(
    step: int,
    stage: str,
    tol: float,
    pairs: list[Pair],
    linear: bool,
) -> StageResult:
    """Compare (name, rank, reference, value) fingerprints; the ratio when every differing one is a scaled copy."""
    worst, diffs, ratios, copies = 0.0, [], [], True
    for name, rank, ref, got in pairs:
        rows = compare_linear(ref, got) if linear else compare_full(ref, got)
        component, x, y, rel = max(rows, key=lambda row: row[3])
        worst = max(worst, rel)
        if rel > tol:
            r = scale_ratio(ref, got, linear)
            if r is not None and is_scaled_copy(ref, got, r, linear, tol):
                ratios.append(r)
            else:
                copies = False
            diffs.append((rel, ParamDiff(name, rank, component, x, y, rel, r)))
    if not pairs:
        return StageResult(step, stage, "not recorded", tol, 0.0, 0, 0)
    result = StageResult(
        step, stage, "differs" if diffs else "equal", tol, worst, len(pairs), len(diffs),
        shown=[d for _, d in sorted(diffs, key=lambda item: -item[0])[:MAX_SHOWN]],
    )  # fmt: skip
    if diffs and copies and ratios:
        mid = statistics.median(ratios)
        if all(abs(r - mid) <= RATIO_SPREAD * abs(mid) for r in ratios):
            result.ratio = mid
    return result


def _pairs_vs_reference(a: StepPrints, b: StepPrints, stage: str) -> list[Pair]:
    ref_rank = min(a.ranks)
    out: list[Pair] = []
    for i, name in enumerate(a.names):
        ref = a.ranks[ref_rank].stage(stage)[i]
        if ref is None:
            continue
        for rank, rs in sorted(b.ranks.items()):
            got = rs.stage(stage)[i] if i < len(rs.stage(stage)) else None
            if got is not None:
                out.append((name, rank, ref, got))
    return out


def _pairs_between_ranks(b: StepPrints, stage: str) -> list[Pair]:
    first = min(b.ranks)
    out: list[Pair] = []
    for i, name in enumerate(b.names):
        ref = b.ranks[first].stage(stage)[i]
        if ref is None:
            continue
        for rank, rs in sorted(b.ranks.items()):
            got = rs.stage(stage)[i]
            if rank != first and got is not None:
                out.append((name, rank, ref, got))
    return out


def _mean_local(s: StepPrints, i: int) -> list[float] | None:
    prints = [r.local[i] for r in s.ranks.values()]
    if not prints or any(p is None for p in prints):
        return None
    return mean_print([p for p in prints if p is not None])


def _sync_cause(facts: StepFacts | None) -> str:
    if facts is None or not facts.sync:
        return "grads-not-synced"
    syncs = list(facts.sync.values())
    if all(not any(s) for s in syncs):
        return "ddp-bypassed"
    if any(s and not s[-1] for s in syncs):
        return "no-sync-after-forward"
    return "grads-not-synced"


def _stage_causes(
    result: StageResult, facts_a: StepFacts | None, facts_b: StepFacts | None, sharded: bool = False
) -> list[str]:
    stage = result.stage
    zero_grads = [v for f in (facts_a, facts_b) if f is not None for v in f.zero_grad_after_backward.values()]
    if stage == "local":
        if any(zero_grads):
            return ["zero-grad-inside-accum"]
        return ["loss-normalization-variable-tokens", "loss-norm-per-rank-tokens"]
    if stage == "param":
        return ["replica-divergence"] if result.step > 0 else [UNEXPLAINED]
    if stage == "clipped":
        clips = [c for f in (facts_a, facts_b) if f is not None for c in f.clip.values()]
        if len({c[0] for c in clips if math.isfinite(c[0])}) > 1:
            return [UNEXPLAINED]  # max_norm differs: said in the note
        # a clip by each shard's norm needs sharded gradients
        return ["clip-before-unscale", "fsdp-clip-wrong"] if sharded else ["clip-before-unscale"]
    if stage == "update":
        sched = [v for f in (facts_a, facts_b) if f is not None for v in f.sched_steps.values()]
        if any(v > 1 for v in sched):
            return ["scheduler-per-microstep"]
        return [UNEXPLAINED]
    return [UNEXPLAINED]


def compare(a: RunPrints, b: RunPrints) -> Equivalence:
    """Run A is the reference (e.g. world size 1), run B the run to explain."""
    problems = [f"A: {p}" for p in a.problems] + [f"B: {p}" for p in b.problems]
    steps = sorted(set(a.steps) & set(b.steps))
    for name, run in (("A", a), ("B", b)):
        if not run.steps:
            problems.append(f"run {name} ({run.path}) has no fingerprints: record it with `ddp-doctor equiv` "
                            "or `ddp-doctor run --fingerprints K`")  # fmt: skip
    if b.subset is not None:
        present = sorted({r for s in b.steps.values() for r in s.ranks})
        problems.append(
            f"B read as ranks {b.subset[0]}-{b.subset[1]} of {b.world} (--ranks; {len(present)} present): param, "
            "reduced, clipped and update are compared per rank and between these ranks; the stage local "
            "(a mean over all ranks), B's own mean check and the whole global batch need every rank "
            "and are not judged (the data: only that these ranks' samples are in A's batch)"
        )
    tolerances: dict[int, Tolerance] = {}
    data: list[DataCheck] = []
    stages: list[StageResult] = []
    first_break: StageResult | None = None
    data_differs_at: int | None = None
    reasons: list[DataReason] = []
    if any(a.steps[t].sharded or b.steps[t].sharded for t in steps):
        problems.append(
            "sharded fingerprints (FSDP2): each sharded run is compared as its shards merged into full "
            "tensors (Σx, Σx², Σ|x|, max|x|; no samples), so param, reduced, clipped and update are "
            "compared whole; local is not judged and the ranks are not compared with each other"
        )
    for step in steps:
        sa, sb = a.steps[step], b.steps[step]
        sharded = sa.sharded or sb.sharded
        sa, sb = (merge_shards(sa) if sa.sharded else sa), (merge_shards(sb) if sb.sharded else sb)
        fa, fb = a.facts.get(step), b.facts.get(step)
        shape_a, shape_b = _shape(a, sa, fa), _shape(b, sb, fb)
        tol = tolerance(shape_a, shape_b, a.optimizer or b.optimizer)
        tolerances[step] = tol
        check = _data_check(step, sa, sb, b.subset is not None)
        data.append(check)
        judged = first_break is None and data_differs_at is None
        if check.status == "differs" and judged:
            data_differs_at = step
            reasons = data_reasons(a, b, check)
            judged = False
        if sa.names != sb.names:
            problems.append(
                f"step {step}: the runs' parameter names differ ({len(sa.names)} vs {len(sb.names)})"
            )
            judged = False
        for stage in STAGES:
            if not judged:
                stages.append(StageResult(step, stage, "not judged", 0.0, 0.0, 0, 0))
                continue
            if stage == "local" and sharded:
                stages.append(StageResult(step, stage, "not judged", 0.0, 0.0, 0, 0, note="sharded (FSDP2)"))
                continue
            result = _stage(step, stage, sa, sb, tol, shape_a, shape_b, fa, fb, b.subset is not None)
            stages.append(result)
            if result.status == "differs" and first_break is None:
                first_break = result
                judged = False
    clip = [
        {"step": step, "a": _clip(a.facts.get(step)), "b": _clip(b.facts.get(step))}
        for step in steps
        if _clip(a.facts.get(step)) or _clip(b.facts.get(step))
    ]
    verdict: Verdict
    if first_break is not None:
        verdict = "break"
    elif not steps or data_differs_at is not None:
        verdict = "undecided"
    else:
        verdict = "equivalent"
    return Equivalence(
        run_a=str(a.path),
        run_b=str(b.path),
        world_a=a.world,
        world_b=b.world,
        steps=steps,
        tolerances=tolerances,
        data=data,
        stages=stages,
        verdict=verdict,
        first_break=first_break,
        data_differs_at=data_differs_at,
        problems=problems,
        data_reasons=reasons,
        clip=clip,
    )


def _clip(facts: StepFacts | None) -> dict[str, float] | None:
    """torch's clip coefficient min(1, max_norm / (total_norm + 1e-6)) of the lowest rank's clip call."""
    if facts is None or not facts.clip:
        return None
    max_norm, total = facts.clip[min(facts.clip)]
    if not (math.isfinite(max_norm) and math.isfinite(total)):
        return None
    return {"max_norm": max_norm, "total_norm": total, "coef": min(1.0, max_norm / (total + 1e-6))}


def _stage(
    step: int,
    stage: str,
    sa: StepPrints,
    sb: StepPrints,
    tol: Tolerance,
    shape_a: RunShape,
    shape_b: RunShape,
    fa: StepFacts | None,
    fb: StepFacts | None,
    subset: bool = False,
) -> StageResult:
    tau = tol.grad if stage in ("local", "reduced", "clipped") else tol.update
    if stage == "param" and step == 0:
        tau = 2 * max(shape_a.u, shape_b.u)  # the same initialisation: equal up to one rounding
    if stage == "local" and subset:
        return StageResult(step, stage, "not judged", 0.0, 0.0, 0, 0, note="B read as a subset of its ranks")
    if stage == "local":
        pairs: list[Pair] = []
        for i, name in enumerate(sa.names):
            ma, mb = _mean_local(sa, i), _mean_local(sb, i)
            if ma is not None and mb is not None:
                pairs.append((name, None, ma, mb))
        result = _judge(step, stage, tau, pairs, linear=True)
    else:
        result = _judge(step, stage, tau, _pairs_vs_reference(sa, sb, stage), linear=False)
        if stage in ("param", "reduced", "update") and len(sb.ranks) > 1:
            between = _judge(step, stage, tau, _pairs_between_ranks(sb, stage), linear=False)
            if between.status == "differs":
                result.note = f"the ranks of B disagree ({between.differing} parameter×rank pairs)"
                result.causes = [_sync_cause(fb)] if stage == "reduced" else ["replica-divergence"]
                if result.status != "differs":
                    between.stage, between.note, between.causes = stage, result.note, result.causes
                    result = between
                return result
        if stage == "reduced" and result.status == "differs" and not subset:
            inner: list[Pair] = []
            for i, name in enumerate(sb.names):
                local = _mean_local(sb, i)
                reduced = sb.ranks[min(sb.ranks)].reduced[i]
                if local is not None and reduced is not None:
                    inner.append((name, None, local, reduced))
            own = _judge(step, stage, tau, inner, linear=True)
            if own.status == "differs":
                result.note = "B's reduced gradient is not the mean of its ranks' local gradients"
                if own.ratio is not None:
                    result.ratio = own.ratio
                    labels = factors(
                        own.ratio, RunShape(1, 1, 1, "float32"), RunShape(len(sb.ranks), 1, 1, "float32")
                    )
                    result.factor = [label for label, _ in labels]
                    result.causes = sorted({c for _, cs in labels for c in cs}) or ["grads-not-synced"]
                else:
                    result.causes = ["grads-not-synced"]
                return result
    if result.status == "differs":
        # a gradient-scale factor explains a gradient stage; the update is reached only when the
        # clipped gradients agreed, so a ratio there is the lr's (or the optimizer's), not a
        # gradient scale: its causes come from the step facts (scheduler steps, lr)
        if result.ratio is not None and stage != "update":
            labels = factors(result.ratio, shape_a, shape_b)
            result.factor = [label for label, _ in labels]
            result.causes = sorted({c for _, cs in labels for c in cs})
        if any(math.isfinite(d.reference) and not math.isfinite(d.value) for d in result.shown):
            result.causes = ["nonfinite"]  # B went NaN/Inf where A is finite: no ratio, no scale
            result.ratio, result.factor = None, []
        if not result.causes:
            result.causes = _stage_causes(result, fa, fb, sa.sharded or sb.sharded)
        if stage == "clipped":
            notes = []
            for name, f in (("A", fa), ("B", fb)):
                if f is not None and f.clip:
                    c = f.clip[min(f.clip)]
                    notes.append(f"{name}: max_norm {c[0]:.4g}, total norm {c[1]:.4g}")
            result.note = "; ".join(notes)
        if stage == "update" and fa is not None and fb is not None and fa.lr and fb.lr:
            la, lb = fa.lr[min(fa.lr)], fb.lr[min(fb.lr)]
            if la != lb:
                result.note = f"lr {la:.4g} (A) vs {lb:.4g} (B)"
    return result


__all__ = ["Equivalence", "RankStep", "compare"]
