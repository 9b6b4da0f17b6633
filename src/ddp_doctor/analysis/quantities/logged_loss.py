"""Which loss is the script logging? The `logged_loss` records matched against forms of the loss.

The script's logged values (probe/capture: printed lines, TensorBoard, wandb, HF Trainer,
Lightning, Fabric, accelerate; or the reference trainer's metrics.jsonl) are grouped into series
by (source, key, rank). Each value is lined up with the optimizer step it most likely describes
(a value logged when ``micro == 0`` follows ``optimizer.step()`` of window ``step - 1``; one
logged mid-window follows micro-step ``micro - 1`` — or precedes micro-step ``micro``, the
"before" alignment, for a loss printed between forward and backward; or describes the step before
that, "one step late", as HF Trainer's logged loss does), and compared with
candidate values computed from the probe's own records, for the logging rank r and for all ranks:

    rank-local:  u_r(t, i)           micro-batch loss (loss-function output, else backward root)
                 u_r(t, i) / A, × A  the same divided / multiplied by the accumulation count A
                 root_r(t, i)        the backward root as it was
                 L_r(t)              the rank's step loss (mean over its micro-batches)
                 Σ_i u_r(t, i)       the step sum (loss.item() accumulated undivided)
                 mean L_r over (t_prev, t]   mean since the previous logged value ("running loss")
                 mean L_r over [epoch start, t]   mean since the start of the epoch (tqdm's
                                     ``total / (i + 1)``; epochs start where the sampler feeding
                                     the steps began a training iteration, else at step 0)
    global:      each rank-local form averaged over ranks (what an all-reduce of it logs), the
                 token-weighted global step loss L(t) and its mean over (t_prev, t]

A logged value v matches a candidate c when |v − c| ≤ resolution + REL_TOL·|c| (resolution:
half a unit of the last printed digit). The form of a series is the candidate that matches the
most of its values (ties: smaller median error); it is recognised when it matches at least
MATCH_MIN of at least MIN_POINTS values, and a rank-local form is told apart from the global one
only when the best global form matches at most DISTINCT_MAX of them (ranks whose losses are equal —
identical data on every rank — make the two indistinguishable).

Noise: ``k = (std(Δ logged) / mean|logged|) / (std(Δ L) / mean|L|)`` over the logged steps, with
Δ the difference between consecutive logged values and L the global step loss at the same steps
(the mean over ranks of the same micro-batch when no step loss applies) — how much more, relative
to its level, the curve the user looks at jumps than the global loss.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddp_doctor.analysis.quantities.samplers import feeding, sampler_uses
from ddp_doctor.analysis.quantities.series import Series
from ddp_doctor.core.catalog import limit
from ddp_doctor.rundir.reader import RunData, StepColumns, num

REL_TOL = 1e-3  # float32 vs float64 arithmetic, means computed in another order
MIN_POINTS = int(limit("rank0-only-loss-log", "min_points"))
MATCH_MIN = limit("rank0-only-loss-log", "match_min")
DISTINCT_MAX = limit("rank0-only-loss-log", "distinct_max")
# keys naming an evaluation loss: the user watches them too, but they are not the training curve
EVAL_WORDS = ("val", "eval", "test", "valid", "dev")
TRAINER_METRICS = "trainer/metrics.jsonl"

LOCAL, GLOBAL = "rank-local", "global"
PRINTED = ("stdout", "stderr")  # sources read from printed text (rounded values)


@dataclass
class Form:
    name: str  # e.g. "micro-batch loss × accumulation"
    family: str  # LOCAL or GLOBAL
    alignment: str  # "after" or "before"
    matched: int
    points: int
    median_error: float  # median |v − c| / tolerance over the points with a candidate

    @property
    def fraction(self) -> float:
        return self.matched / self.points if self.points else 0.0


@dataclass
class LoggedSeries:
    source: str
    key: str
    rank: int  # -1: values averaged over ranks by the logger (Lightning sync_dist)
    points: int
    best: Form | None = None
    best_other: Form | None = None  # best form of the other family
    noise_ratio: float | None = None  # k, see module docstring
    recognised: bool = False
    distinct: bool = False

    @property
    def label(self) -> str:
        who = "all ranks (mean)" if self.rank < 0 else f"rank {self.rank}"
        return f"{self.source} {self.key!r} ({who})"

    def as_evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "key": self.key,
            "rank": self.rank,
            "points": self.points,
        }
        if self.best is not None:
            out.update(
                form=self.best.name,
                family=self.best.family,
                alignment=self.best.alignment,
                matched=self.best.matched,
                matched_fraction=round(self.best.fraction, 3),
            )
        if self.best_other is not None:
            out["other_family_best"] = f"{self.best_other.name}: {self.best_other.matched}/{self.points}"
        if self.noise_ratio is not None:
            out["noise_ratio_vs_global"] = round(self.noise_ratio, 3)
        return out


@dataclass
class LoggedLoss:
    series: list[LoggedSeries] = field(default_factory=list)  # training-loss series, best first
    looked_at: list[str] = field(default_factory=list)  # every (source, key) seen, eval keys too

    @property
    def main(self) -> LoggedSeries | None:
        return self.series[0] if self.series else None


@dataclass
class _Point:
    step: int
    micro: int
    value: float
    resolution: float


def is_eval_key(key: str) -> bool:
    words = [w for w in _split(key.lower()) if w]
    return any(w in EVAL_WORDS or w.startswith(("val", "eval")) for w in words)


def _split(key: str) -> list[str]:
    for sep in "/._- ":
        key = key.replace(sep, " ")
    return key.split(" ")


def collect(run: RunData) -> dict[tuple[str, str, int], list[_Point]]:
    """The logged values grouped by (source, key, rank), in the order they were logged."""
    groups: dict[tuple[str, str, int], list[_Point]] = {}
    reduced: dict[tuple[str, str], dict[tuple[int, int], list[_Point]]] = {}
    for rank in sorted(run.ranks):
        for rec in run.ranks[rank].records.get("logged_loss", []):
            try:
                point = _Point(
                    int(rec["step"]),
                    int(rec.get("micro", 0)),
                    num(rec["value"]),
                    num(rec.get("resolution", 0)),
                )
                source, key = str(rec["source"]), str(rec["key"])
            except (KeyError, TypeError, ValueError):
                continue
            if not math.isfinite(point.resolution):
                point.resolution = 0.0
            if rec.get("reduce") == "mean":
                reduced.setdefault((source, key), {}).setdefault((point.step, point.micro), []).append(point)
            else:
                groups.setdefault((source, key, int(rec.get("rank", rank))), []).append(point)
    for (source, key), by_pos in reduced.items():
        groups[(source, key, -1)] = [
            _Point(s, m, float(np.mean([p.value for p in ps])), max(p.resolution for p in ps))
            for (s, m), ps in sorted(by_pos.items())
        ]
    metrics = []
    for rec in run.trainer_metrics:
        try:
            metrics.append(_Point(int(rec["step"]) + 1, 0, num(rec["loss"]), 0.0))
        except (KeyError, TypeError, ValueError):
            continue
    if metrics:
        groups[(TRAINER_METRICS, "loss", 0)] = metrics
    return groups


class _Micro:
    """Per-rank micro-batch losses by (step, micro index), and accumulation counts."""

    def __init__(self, cols: StepColumns) -> None:
        value = cols.fn_value
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(
                cols.fn_sum, value / np.where(cols.fn_n_valid > 0, cols.fn_n_valid, np.nan), value
            )
        self.u = np.where(np.isfinite(mean), mean, cols.losses)
        self.root = cols.losses
        self.cols = cols

    @functools.cached_property
    def index(self) -> dict[int, int]:
        # built on first use: most runs log no loss the probe captured, and 10^5 steps cost 50 ms
        return {int(s): i for i, s in enumerate(self.cols.step.tolist())}

    def window(self, step: int) -> tuple[int, int] | None:
        i = self.index.get(step)
        if i is None:
            return None
        return int(self.cols.offsets[i]), int(self.cols.micro_steps[i])

    def at(self, step: int, micro: int) -> tuple[float, float, int]:
        """(u, root, A) of micro-step `micro` (negative: from the end) of `step`; nan when absent."""
        w = self.window(step)
        if w is None:
            return math.nan, math.nan, 0
        start, count = w
        if micro < 0:
            micro += count
        if not 0 <= micro < count:
            return math.nan, math.nan, count
        return float(self.u[start + micro]), float(self.root[start + micro]), count

    def step_sum(self, step: int) -> float:
        w = self.window(step)
        if w is None or w[1] == 0:
            return math.nan
        return float(np.sum(self.u[w[0] : w[0] + w[1]]))


# How a logged value lines up with the step it describes (module docstring): right after the step
# ("after"), between forward and backward ("before"), or one optimizer step late ("one step late":
# HF Trainer logs the all-reduced loss of the step before the one just taken, measured 40/40 at
# step s−1 and 0/40 at s on run_clm.py with logging_steps=1).
ALIGNMENTS = ("after", "before", "one step late")


def _positions(points: list[_Point], alignment: str) -> list[tuple[int, int]]:
    """(step, micro index) each value describes; micro -1 = the last micro-step of that step."""
    out = []
    for p in points:
        if alignment == "after":
            out.append((p.step - 1, -1) if p.micro == 0 else (p.step, p.micro - 1))
        elif alignment == "one step late":
            out.append((p.step - 2, -1) if p.micro == 0 else (p.step - 1, -1))
        else:
            out.append((p.step, p.micro))
    return out


def _window_mean(loss: np.ndarray, steps: list[int]) -> list[float]:
    """Mean of loss over (previous logged step, this logged step] — the 'running loss' of a print loop."""
    out, prev = [], None
    for t in steps:
        lo = 0 if prev is None else prev + 1
        seg = loss[max(lo, 0) : t + 1] if 0 <= t < loss.shape[0] else np.array([])
        out.append(float(np.mean(seg)) if seg.size and lo <= t else math.nan)
        prev = t if t >= 0 else prev
    return out


def _epoch_mean(loss: np.ndarray, steps: list[int], starts: list[int]) -> list[float]:
    """Mean of loss from the start of the epoch of each logged step to it (``total / (i + 1)``).

    Epochs start where the sampler feeding the steps began a training iteration (quantities/samplers.py), else at step 0.
    """
    out = []
    for t in steps:
        lo = max([s for s in starts if s <= t], default=0)
        seg = loss[lo : t + 1] if 0 <= t < loss.shape[0] else np.array([])
        out.append(float(np.mean(seg)) if seg.size else math.nan)
    return out


def _columns(series: Series, steps: list[int], starts: list[int]) -> tuple[list[int], list[int]]:
    """The series columns of logged steps (-1: a step not read, on the rollup path) and of epoch
    starts (the first column at or after each); the steps themselves on a dense axis."""
    if series.dense:
        return steps, starts
    at, ok = series.pos(np.asarray(steps, dtype=np.int64))
    cols = np.where(ok, at, -1).tolist()
    return cols, np.searchsorted(series.steps, np.asarray(starts, dtype=np.int64)).tolist()


def _rank_forms(
    points: list[_Point],
    pos: list[tuple[int, int]],
    m: _Micro,
    local: np.ndarray | None,
    step_level: bool,
    starts: list[int],
    columns: tuple[list[int], list[int]] | None = None,
) -> dict[str, list[float]]:
    """The rank-local forms of the loss for one rank, at each logged value's position (``columns``:
    where those steps and the epoch starts lie in ``local``, when not at their step numbers)."""
    steps = [t for t, _ in pos]
    cols, col_starts = columns if columns is not None else (steps, starts)
    vals = [m.at(t, i) for t, i in pos]
    u = [v[0] for v in vals]
    acc = [float(v[2]) if v[2] else math.nan for v in vals]
    out = {
        "micro-batch loss": u,
        "micro-batch loss ÷ accumulation": [x / a for x, a in zip(u, acc)],
        "micro-batch loss × accumulation": [x * a for x, a in zip(u, acc)],
        "backward root": [v[1] for v in vals],
    }
    if step_level and local is not None:
        T = local.shape[0]
        out["step loss (mean over micro-batches)"] = [
            float(local[t]) if 0 <= t < T else math.nan for t in cols
        ]
        out["step sum over micro-batches"] = [m.step_sum(t) for t in steps]
        out["mean since the previous logged value"] = _window_mean(local, cols)
        out["mean since the start of the epoch"] = _epoch_mean(local, cols, col_starts)
    return out


def _candidates(
    points: list[_Point],
    alignment: str,
    rank: int,
    micro: dict[int, _Micro],
    series: Series,
    starts: list[int],
) -> dict[tuple[str, str], list[float]]:
    """Candidate values per (family, form): the logging rank's forms, and the same forms averaged
    over ranks (what an all-reduce of that quantity logs) plus the token-weighted global loss."""
    pos = _positions(points, alignment)
    steps = [t for t, _ in pos]
    columns = _columns(series, steps, starts)
    cols, col_starts = columns
    # step-level forms describe a finished step: only for values logged after optimizer.step()
    step_level = alignment != "before" or all(p.micro == 0 for p in points)
    per_rank = {
        r: _rank_forms(
            points,
            pos,
            micro[r],
            series.local_loss[series.row(r)] if r in series.ranks else None,
            step_level,
            starts,
            columns,
        )
        for r in series.ranks
        if r in micro
    }
    out: dict[tuple[str, str], list[float]] = {}
    if rank in per_rank:
        for name, values in per_rank[rank].items():
            out[(LOCAL, name)] = values
    if per_rank:
        first = next(iter(per_rank.values()))
        for name in [n for n in first if all(n in f for f in per_rank.values())]:
            with np.errstate(invalid="ignore"):
                mean = np.mean(np.array([per_rank[r][name] for r in per_rank], dtype=float), axis=0)
            out[(GLOBAL, f"{name} averaged over ranks")] = [float(x) for x in mean]
    if step_level:
        glob = series.global_loss
        T = series.n_steps
        out[(GLOBAL, "global step loss")] = [float(glob[t]) if 0 <= t < T else math.nan for t in cols]
        out[(GLOBAL, "global mean since the previous logged value")] = _window_mean(glob, cols)
        out[(GLOBAL, "global mean since the start of the epoch")] = _epoch_mean(glob, cols, col_starts)
    return out


def _score(points: list[_Point], values: list[float]) -> tuple[int, float]:
    matched, errors = 0, []
    for p, c in zip(points, values):
        if not (math.isfinite(c) and math.isfinite(p.value)):
            continue
        tol = p.resolution + REL_TOL * abs(c) + 1e-12
        err = abs(p.value - c) / tol
        errors.append(err)
        matched += err <= 1.0
    return matched, float(np.median(errors)) if errors else math.inf


def relative_noise_ratio(logged: np.ndarray, glob: np.ndarray) -> float | None:
    """k = (std(Δ logged) / mean|logged|) / (std(Δ global) / mean|global|) over the values both have.

    Relative, so a form scaled by the accumulation count (÷A, ×A) compares on the loss's scale.
    """
    ok = np.isfinite(logged) & np.isfinite(glob)
    if ok.sum() < 3:
        return None
    x, g = logged[ok], glob[ok]
    mx, mg = float(np.mean(np.abs(x))), float(np.mean(np.abs(g)))
    dg = float(np.std(np.diff(g)))
    if mx <= 0 or mg <= 0 or dg <= 0:
        return None
    return float((np.std(np.diff(x)) / mx) / (dg / mg))


def match_series(
    source: str,
    key: str,
    rank: int,
    points: list[_Point],
    micro: dict[int, _Micro],
    series: Series,
    starts: list[int] | None = None,
) -> LoggedSeries:
    result = LoggedSeries(source, key, rank, len(points))
    forms: list[Form] = []
    values_of: dict[tuple[str, str, str], list[float]] = {}
    for alignment in ALIGNMENTS:
        for (family, name), values in _candidates(
            points, alignment, rank, micro, series, starts or []
        ).items():
            matched, err = _score(points, values)
            forms.append(Form(name, family, alignment, matched, len(points), err))
            values_of[(family, name, alignment)] = values
    if not forms:
        return result
    rank_key: Callable[[Form], tuple[int, float]] = lambda f: (-f.matched, f.median_error)  # noqa: E731
    forms.sort(key=rank_key)
    best = result.best = forms[0]
    others = [f for f in forms if f.family != best.family]
    result.best_other = others[0] if others else None
    result.recognised = len(points) >= MIN_POINTS and best.fraction >= MATCH_MIN
    result.distinct = result.best_other is None or result.best_other.fraction <= DISTINCT_MAX
    if result.recognised:
        logged = np.array([p.value for p in points])
        glob = np.full(len(points), math.nan)
        for wanted in ((GLOBAL, "global step loss"), (GLOBAL, "micro-batch loss averaged over ranks")):
            candidate = np.array(values_of.get((*wanted, best.alignment), glob), dtype=float)
            if np.isfinite(candidate).sum() >= 3:
                glob = candidate
                break
        result.noise_ratio = relative_noise_ratio(logged, glob)
    return result


def logged_loss(run: RunData, series: Series) -> LoggedLoss:
    """Every captured training-loss series with its recognised form, the most telling first."""
    groups = collect(run)
    out = LoggedLoss(looked_at=sorted({f"{s} {k!r}" for s, k, _ in groups}))
    micro = {r: _Micro(d.steps) for r, d in run.ranks.items() if d.steps is not None and len(d.steps)}
    # one series per (source, key): the lowest logging rank (what a rank-0 print shows), or the
    # logger's own average over ranks
    chosen: dict[tuple[str, str], int] = {}
    for source, key, rank in sorted(groups, key=lambda g: (g[2] < 0, g[2])):
        if not is_eval_key(key):
            chosen.setdefault((source, key), rank)
    # epochs start where the sampler feeding the optimizer steps began a training iteration
    # (not where a val sampler or a one-batch peek was iterated)
    use, _ = feeding(sampler_uses(run))
    starts = sorted(
        {i.step for its in (use.training().values() if use else ()) for i in its if i.step is not None}
    )
    results = [
        match_series(s, k, r, groups[(s, k, r)], micro, series, starts) for (s, k), r in chosen.items()
    ]
    results.sort(
        key=lambda x: (
            not x.recognised,
            not x.distinct,
            -(x.best.fraction if x.best else 0.0),
            -x.points,
            x.source in PRINTED,  # on a tie, the exact value a library was given beats its printout
            x.source,
        )
    )
    out.series = results
    return out
