"""Which of the forum's suggestions actually make this run more stable? Baseline vs interventions.

`ddp-doctor ablate -- CMD` runs CMD as a baseline and once per variant (a set of interventions,
ddp_doctor.probe.interventions), each with K seeds (the `seed=` intervention), every run
through the probe (`ddp-doctor run --out RUN --set ... -- CMD`). It then computes the stability
metrics of every run (experiments.stability) and, per variant and metric, the difference of
means to the baseline with a bootstrap CI and the symmetric relative change (experiments.stats).

Ranking: a variant's score is the mean over metrics of the symmetric relative change of its mean
(−2 … 2, negative = more stable than the baseline); variants are listed best score first. The
verdict needs more than the point estimate: "helped" when the score is negative, at least one
metric's CI lies entirely below 0 and none entirely above; "hurt" mirrored; otherwise "unclear".

Layout of OUT (resumable: a run whose manifest has an `end` is never run again; one that started
and has none was killed, and is started again from scratch):
    OUT/command.json                   the command (resuming with another one is an error)
    OUT/ablate.json                    the table (written when every run is done)
    OUT/runs/<variant>/seed-<k>/       one run directory per run (docs/run-format.md)
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ddp_doctor.core.findings import jsonable
from ddp_doctor.core.safe_io import open_log, write_text
from ddp_doctor.experiments.stability import METRICS, Stability, stability_of_run
from ddp_doctor.experiments.stats import bootstrap_diff_ci, mean, symmetric_change
from ddp_doctor.probe.interventions import ENV_VAR, InterventionError, parse_sets, to_env

ABLATE_SCHEMA = "ddp-doctor.ablate/1"
BASELINE = "baseline"
RUNS_DIR = "runs"
TABLE_FILE = "ablate.json"
COMMAND_FILE = "command.json"
# The forum's suggestions (docs/experiments.md): lower the lr, clip, warm up longer, change
# Adam's eps/beta2, turn compile off, fix the sampler epoch. `warmup` is in optimizer steps.
DEFAULT_VARIANTS: tuple[str, ...] = (
    "lr.scale=0.5",
    "lr.scale=0.1",
    "clip=1.0",
    "warmup=100",
    "adam.eps=1e-10",
    "adam.beta2=0.95",
    "compile=off",
    "sampler.set_epoch=auto",
)

# Runs one probed command: (command, run directory, interventions) -> exit code.
Runner = Callable[[Sequence[str], Path, dict[str, str]], int]
Verdict = Literal["helped", "hurt", "unclear", "baseline", "no runs", "not applied"]


@dataclass(frozen=True)
class Variant:
    """A named set of interventions (the baseline has none)."""

    name: str
    sets: dict[str, str]


def parse_variants(texts: Sequence[str]) -> list[Variant]:
    """Each text is one variant: `KEY=VALUE`, or several joined by `,` (applied together)."""
    out: list[Variant] = []
    for text in texts:
        sets = parse_sets([item for item in text.split(",") if item.strip()])
        if not sets:
            raise InterventionError(f"empty variant {text!r}")
        if "seed" in sets:
            raise InterventionError("seed is set by ablate itself (--seeds); remove it from the variant")
        name = ",".join(f"{k}={v}" for k, v in sets.items())
        if name in {v.name for v in out}:
            raise InterventionError(f"variant {name} given twice")
        out.append(Variant(name, sets))
    return out


def run_dir_name(variant: Variant) -> str:
    """A file-system-safe directory name for a variant (`lr.scale=0.1` → `lr.scale-0.1`)."""
    return re.sub(r"[^A-Za-z0-9._+-]", "-", variant.name.replace(",", "+"))


def is_finished(run_dir: Path) -> bool:
    """A run is done (success or failure) once the launcher wrote `end` into its manifest."""
    try:
        return bool(json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("end"))
    except (OSError, ValueError):
        return False


def probe_runner(command: Sequence[str], run_dir: Path, sets: dict[str, str]) -> int:
    """`ddp-doctor run --out RUN -- CMD` in a subprocess, interventions in `DDP_DOCTOR_SET`.

    The environment variable is what `run --set` itself hands to every rank (the probe applies it
    at torch import); output goes to RUN.log beside the run directory.
    """
    argv = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(run_dir), "--", *command]
    env = dict(os.environ, **{ENV_VAR: to_env(sets)})
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with open_log(run_dir.parent / f"{run_dir.name}.log") as log:
        return subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT).returncode


def intervention_effects(run_dir: Path) -> dict[str, int] | None:
    """How often each intervention took effect, summed over ranks (the probe's `end` records).

    None when no rank recorded it (an older probe, or a run killed before its end).
    """
    from ddp_doctor.rundir.reader import read_run

    effects: dict[str, int] | None = None
    for rank in read_run(run_dir).ranks.values():
        counts = (rank.end or {}).get("interventions")
        if isinstance(counts, dict):
            effects = effects or {}
            for key, n in counts.items():
                effects[key] = effects.get(key, 0) + int(n)
    return effects


@dataclass
class MetricDiff:
    baseline: float
    variant: float
    change: float  # symmetric relative change of the means
    ci_low: float  # bootstrap CI of mean(variant) − mean(baseline)
    ci_high: float


@dataclass
class VariantResult:
    name: str
    sets: dict[str, str]
    runs: int
    failed: int  # runs that exited non-zero or left no readable data
    diverged: int
    metrics: dict[str, list[float]]  # metric -> value per seed
    not_applied: list[str] = field(default_factory=list)  # keys that took effect in no run
    diffs: dict[str, MetricDiff] = field(default_factory=dict)
    score: float = math.nan
    verdict: Verdict = "unclear"


@dataclass
class AblateResult:
    command: list[str]
    seeds: int
    variants: list[VariantResult]  # baseline first, then ranked

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": ABLATE_SCHEMA,
            "command": self.command,
            "seeds": self.seeds,
            "metrics": list(METRICS),
            "variants": [jsonable(asdict(v)) for v in self.variants],
        }


def plan_runs(out: Path, variants: Sequence[Variant], seeds: int) -> list[tuple[Variant, int, Path]]:
    """Every (variant, seed, run directory), baseline first."""
    arms = [Variant(BASELINE, {}), *variants]
    return [(v, s, out / RUNS_DIR / run_dir_name(v) / f"seed-{s}") for v in arms for s in range(seeds)]


def execute(
    command: Sequence[str],
    plan: list[tuple[Variant, int, Path]],
    runner: Runner,
    jobs: int = 1,
    on_done: Callable[[Variant, int, bool], None] | None = None,
) -> None:
    """Run every planned run that is not finished yet, `jobs` at a time."""
    todo = [(v, s, d) for v, s, d in plan if not is_finished(d)]
    for v, s, d in plan:
        if (v, s, d) not in todo and on_done is not None:
            on_done(v, s, True)

    def one(item: tuple[Variant, int, Path]) -> None:
        variant, seed, run_dir = item
        if run_dir.exists():  # started before but never finished (killed): start it again
            shutil.rmtree(run_dir)
        runner(command, run_dir, variant.sets | {"seed": str(seed)})
        if on_done is not None:
            on_done(variant, seed, False)

    if jobs <= 1:
        for item in todo:
            one(item)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, todo))


def _run_ok(run_dir: Path) -> bool:
    """Exit 0, or training completed and only a rank's teardown abort failed it (ddp_doctor.rundir.teardown)."""
    from ddp_doctor.rundir.teardown import classify_run

    try:
        code = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("exit_code")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(code, int) and classify_run(run_dir, code).ok


def collect(
    plan: list[tuple[Variant, int, Path]],
    measure: Callable[[Path], Stability] = stability_of_run,
    effects_of: Callable[[Path], dict[str, int] | None] = intervention_effects,
) -> list[VariantResult]:
    """Metrics of every finished run, grouped by variant (baseline first, in plan order), and the
    variant's keys that took effect in none of its runs (e.g. adam.eps on an SGD script)."""
    results: dict[str, VariantResult] = {}
    seen: dict[str, dict[str, int]] = {}
    for variant, _seed, run_dir in plan:
        res = results.setdefault(
            variant.name,
            VariantResult(
                name=variant.name,
                sets=variant.sets,
                runs=0,
                failed=0,
                diverged=0,
                metrics={m: [] for m in METRICS},
            ),
        )
        stab = None
        if _run_ok(run_dir):
            try:
                stab = measure(run_dir)
            except Exception:  # an unreadable run counts as failed; the table goes on
                stab = None
        if stab is None or stab.steps == 0:
            res.failed += 1
            continue
        res.runs += 1
        res.diverged += stab.diverged
        for m in METRICS:
            res.metrics[m].append(getattr(stab, m))
        effects = effects_of(run_dir)
        if effects is not None:
            counts = seen.setdefault(variant.name, {})
            for key in variant.sets:
                counts[key] = counts.get(key, 0) + effects.get(key, 0)
    for name, counts in seen.items():
        results[name].not_applied = sorted(k for k, n in counts.items() if n == 0)
    return list(results.values())


def rank(results: list[VariantResult]) -> list[VariantResult]:
    """Fill diffs, scores and verdicts against the baseline; baseline first, then best score first."""
    baseline, others = results[0], results[1:]
    baseline.verdict = "baseline"
    baseline.score = 0.0
    for res in others:
        changes, better, worse = [], 0, 0
        for m in METRICS:
            b_vals = [x for x in baseline.metrics[m] if not math.isnan(x)]
            v_vals = [x for x in res.metrics[m] if not math.isnan(x)]
            if not b_vals or not v_vals:
                continue
            b_mean, v_mean = mean(b_vals), mean(v_vals)
            low, high = bootstrap_diff_ci(v_vals, b_vals)
            change = symmetric_change(v_mean, b_mean)
            res.diffs[m] = MetricDiff(
                baseline=b_mean, variant=v_mean, change=change, ci_low=low, ci_high=high
            )
            changes.append(change)
            if high < 0 or (math.isinf(b_mean) and not math.isinf(v_mean)):
                better += 1
            elif low > 0 or (math.isinf(v_mean) and not math.isinf(b_mean)):
                worse += 1
        if not res.runs:
            res.verdict = "no runs"
            continue
        if res.not_applied and set(res.not_applied) == set(res.sets):
            res.verdict = "not applied"  # the script has nothing these keys act on
            continue
        res.score = sum(changes) / len(changes) if changes else math.nan
        if res.score < 0 and better and not worse:
            res.verdict = "helped"
        elif res.score > 0 and worse and not better:
            res.verdict = "hurt"
        else:
            res.verdict = "unclear"
    ranked = sorted(others, key=lambda r: (math.isnan(r.score), r.score))
    return [baseline, *ranked]


def _claim(out: Path, command: Sequence[str]) -> None:
    """Resuming is only sound for the same command: OUT/command.json pins it."""
    pin = out / COMMAND_FILE
    if pin.exists():
        before = json.loads(pin.read_text(encoding="utf-8"))
        if before != list(command):
            raise ValueError(
                f"{out} holds runs of another command ({' '.join(before)}); choose another --out"
            )
    else:
        write_text(pin, json.dumps(list(command)))


def ablate(
    command: Sequence[str],
    out: Path,
    variants: Sequence[Variant],
    seeds: int,
    runner: Runner = probe_runner,
    jobs: int = 1,
    on_done: Callable[[Variant, int, bool], None] | None = None,
) -> AblateResult:
    """Run (or resume) the whole ablation and write OUT/ablate.json."""
    if seeds < 1:
        raise ValueError("--seeds must be >= 1")
    out.mkdir(parents=True, exist_ok=True)
    _claim(out, command)
    plan = plan_runs(out, variants, seeds)
    execute(command, plan, runner, jobs=jobs, on_done=on_done)
    result = AblateResult(command=list(command), seeds=seeds, variants=rank(collect(plan)))
    write_text(out / TABLE_FILE, json.dumps(result.to_json(), indent=1))
    return result
