"""Hypothesis `gradient-sync`: the gradients the optimizer steps on are not the ranks' average.

Both findings read the `gradsync` records (probe/instruments/stepgrads.py): at the first steps and
every `every`, each rank writes, just before `optimizer.step()`, the norm of every parameter's
gradient; every step's record carries a digest of those norms and Σ_p ⟨g_p, p⟩ of the reduced and
of its own local gradient. No collective: the ranks are compared here.

* grads-not-synced: after DDP's all-reduce every rank holds the same bits, so ‖g_p‖ agrees across
  ranks exactly; a parameter whose norms differ by more than :data:`REL_TOL` (relative) was
  stepped on a rank-local gradient (a module outside the DDP wrapper, `no_sync()` on the last
  micro-step, a gradient written after the reduction). The per-step digest gives the first step,
  the nearest `gradsync` record at or after it the parameters.
* grad-scale-wrong: ⟨·, p⟩ is linear and p is the same on every replica, so DDP's average gives
  k = dot_step / mean_r(dot_local_r) = 1 (÷ the clip coefficient when clip_grad_norm_ clipped).
  A second all-reduce with SUM gives k = world size; dividing again by the world size 1/world.
  Confirmed when the median k over the compared steps is within :data:`INT_TOL` (relative) of an
  integer ≥ 2 or of its inverse; ruled out within :data:`ONE_TOL` of 1. A step whose local values
  nearly cancel (|mean| < :data:`MIN_SIGNAL` × mean |dot_local|) is not used: k would be noise.
  The loss's own divisor (÷ accumulation, ÷ world before backward) scales the local gradients
  too and is not seen here: accum-loss-unscaled measures it from the backward root.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, coverage, fmt, inconclusive, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding
from ddp_doctor.rundir.reader import CLIP_COLUMNS

REL_TOL = limit("grads-not-synced", "rel_tol")
INT_TOL = limit("grad-scale-wrong", "int_tol")
ONE_TOL = limit("grad-scale-wrong", "one_tol")
MIN_SIGNAL = limit("grad-scale-wrong", "min_signal")
MAX_NAMES = 10

# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("grads-not-synced", "grad-scale-wrong")


@dataclass
class _Step:
    """One step's `gradsync` records, by rank."""

    names: dict[int, tuple[str, ...]] = field(default_factory=dict)
    norms: dict[int, list[float]] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # an unnamed parameter's shape


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def gradsync_steps(ctx: Context) -> dict[int, _Step]:
    """step -> what each rank recorded; a record's names are those of its rank's last record naming them."""
    out: dict[int, _Step] = {}
    for rank, data in ctx.run.ranks.items():
        names: tuple[str, ...] | None = None
        shapes: dict[str, tuple[int, ...]] = {}
        for rec in data.records.get("gradsync", []):
            step = rec.get("step")
            if not isinstance(step, int) or isinstance(step, bool) or step < 0:
                continue
            if isinstance(rec.get("names"), list):
                names = tuple(str(n) for n in rec["names"])
                raw = rec.get("shapes")
                if isinstance(raw, list) and len(raw) == len(names):
                    shapes = {
                        n: tuple(int(x) for x in sh if isinstance(x, int))
                        for n, sh in zip(names, raw)
                        if isinstance(sh, list)
                    }
            s = out.setdefault(step, _Step())
            s.shapes = shapes
            norms = rec.get("norms")
            if isinstance(norms, list) and names is not None and len(norms) == len(names):
                vals = [_number(v) for v in norms]
                s.names[rank] = names
                s.norms[rank] = [v if v is not None else math.nan for v in vals]
    return dict(sorted(out.items()))


def check(ctx: Context) -> list[Finding]:
    steps = gradsync_steps(ctx)
    return [_not_synced(ctx, steps), _scale(ctx)]


def _why_not(ctx: Context) -> Text:
    if len(ctx.run.ranks) < 2:
        return Text("Needs ≥ 2 ranks.", "需要至少 2 个 rank。")
    return Text(
        "No gradient digest (written before optimizer.step() on DDP models at world size ≥ 2; not for "
        "FSDP/ZeRO shards, nor by older probes).",
        "没有 `gradsync` 记录（仅在 world size ≥ 2 的 DDP 模型上于 optimizer.step() 前写入；FSDP/ZeRO 分片及旧版探针不写）。",
    )


def _differing(s: _Step) -> tuple[list[dict[str, Any]], int]:
    """Parameters whose gradient norms differ across ranks at this step, and how many were compared."""
    ranks = sorted(s.norms)
    base = s.names[ranks[0]]
    index = {r: {n: i for i, n in enumerate(s.names[r])} for r in ranks[1:]}
    out, compared = [], 0
    for i, name in enumerate(base):
        vals = {ranks[0]: s.norms[ranks[0]][i]}
        for r in ranks[1:]:
            j = index[r].get(name)
            if j is not None:
                vals[r] = s.norms[r][j]
        v = np.array([x for x in vals.values() if math.isfinite(x)])
        if v.size < 2:
            continue
        compared += 1
        top = float(np.abs(v).max())
        spread = float(v.max() - v.min())
        if spread > REL_TOL * max(top, 1e-30):
            out.append(
                {
                    "name": name,
                    "rel_spread": spread / top if top else math.inf,
                    "norms": {str(r): x for r, x in list(vals.items())[:8]},
                }
            )
    return out, compared


def _with(ctx: Context, *names: str) -> list[int]:
    """The ranks whose step records have every one of these fields, in order."""
    return sorted(
        r
        for r, d in ctx.run.ranks.items()
        if d.steps is not None and len(d.steps) and set(names) <= set(d.steps.extra)
    )


def _by_step(ctx: Context, name: str, ranks: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values [ranks, steps]) of a per-step field of these ranks; nan where a rank has no
    finite value at a step. One matrix instead of a dict per step: the rollup path and runs of
    thousands of ranks compare millions of (rank, step) values."""
    cols = [(c.step, c.extra[name]) for r in ranks if (c := ctx.run.ranks[r].steps) is not None]
    if not cols:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0))
    steps = np.unique(np.concatenate([s[(s >= 0) & np.isfinite(v)] for s, v in cols]))
    mat = np.full((len(cols), len(steps)), np.nan)
    for i, (s, v) in enumerate(cols):
        ok = (s >= 0) & np.isfinite(v)
        mat[i, np.searchsorted(steps, s[ok])] = v[ok]
    return steps, mat


def _digests(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Steps with a grad_digest on ≥ 2 ranks, and for each whether the ranks' digests differ."""
    steps, d = _by_step(ctx, "grad_digest", _with(ctx, "grad_digest"))
    if not steps.size:
        return steps, np.zeros(0, dtype=bool)
    keep = np.isfinite(d).sum(axis=0) >= 2
    d = d[:, keep]
    with np.errstate(invalid="ignore"):
        top, low = np.nanmax(d, axis=0), np.nanmin(d, axis=0)
    differ = (top - low) > REL_TOL * np.maximum(np.abs(top), 1e-30)
    return steps[keep].astype(np.int64), np.asarray(differ, dtype=bool)


def _not_synced(ctx: Context, steps: dict[int, _Step]) -> Finding:
    fid = "grads-not-synced"
    usable = {t: s for t, s in steps.items() if len(s.norms) >= 2}
    digest_steps, differ = _digests(ctx)
    if not usable and not digest_steps.size:
        return not_measured(fid, _why_not(ctx))
    named: list[tuple[int, list[dict[str, Any]]]] = []
    total_compared = 0
    for t, s in usable.items():
        diff, compared = _differing(s)
        total_compared = max(total_compared, compared)
        if diff:
            named.append((t, diff))
    bad = [int(t) for t in digest_steps[differ]] + [t for t, _ in named]
    n = ctx.optimizer_steps
    cov = coverage(
        len(set(digest_steps.tolist()) | set(usable)),
        max(n, len(digest_steps)),
        Text(
            "a digest of every parameter's gradient norm per step; per-parameter norms at steps "
            + _steps_text(sorted(usable)),
            "每步一个全部参数梯度范数的摘要；逐参数范数见第 " + _steps_text(sorted(usable)) + " 步",
        ),
    )
    ev: dict[str, Any] = dict(
        steps_with_digest=int(digest_steps.size),
        per_parameter_steps=sorted(usable)[:20],
        parameters_compared=total_compared,
        ranks=len(ctx.run.ranks),
        threshold=threshold_sentence(fid),
        source="step.grad_digest and gradsync records: ‖grad‖ per parameter before optimizer.step() "
        "(probe/instruments/stepgrads.py)",
    )
    if not bad:
        return ruled_out(
            fid,
            Text(
                f"The gradients the optimizer stepped on agreed across ranks at every compared step "
                f"({int(digest_steps.size)} step digests; {total_compared} parameters one by one at "
                f"{len(usable)} steps).",
                f"优化器使用的梯度在每个比较的步上各 rank 一致（{int(digest_steps.size)} 个步摘要；"
                f"{len(usable)} 个步上逐个比较了 {total_compared} 个参数）。",
            ),
            coverage=cov,
            **ev,
        )
    first = min(bad)
    ev.update(
        first_step=first, steps_with_difference=sorted(set(bad))[:20], n_steps_with_difference=len(set(bad))
    )
    # the parameters: from the first per-parameter record at or after the first differing step, else the last before
    after = [x for x in named if x[0] >= first]
    where = after[0] if after else (named[-1] if named else None)
    if where is None:
        return confirmed(
            fid,
            Text(
                f"From step {first} on, the ranks stepped on different gradients ({len(set(bad))} of "
                f"{int(digest_steps.size)} steps); no per-parameter record at a differing step names the parameters.",
                f"从第 {first} 步起，各 rank 使用了不同的梯度（{int(digest_steps.size)} 步中有 {len(set(bad))} 步）；"
                "没有逐参数记录能指出是哪些参数。",
            ),
            **ev,
        )
    at, diff = where
    names = [_with_shape(steps[at], d["name"]) for d in diff]
    shown = ", ".join(names[:MAX_NAMES]) + (
        f" (+{len(names) - MAX_NAMES} more)" if len(names) > MAX_NAMES else ""
    )
    ev.update(named_at_step=at, parameters=diff[:MAX_NAMES], n_parameters=len(diff))
    return confirmed(
        fid,
        Text(
            f"From step {first} on, some parameters were stepped on gradients that differ across ranks "
            f"(never all-reduced): at step {at}, {len(diff)} of {total_compared}: {shown}.",
            f"从第 {first} 步起，部分参数以各 rank 不同（从未 all-reduce）的梯度更新：第 {at} 步 {total_compared} 个中有 "
            f"{len(diff)} 个：{shown}。",
        ),
        **ev,
    )


def _with_shape(s: _Step, name: str) -> str:
    shape = s.shapes.get(name)
    return f"{name} {list(shape)}" if name.startswith("group") and shape is not None else name


def _steps_text(steps: list[int]) -> str:
    head = ", ".join(map(str, steps[:6]))
    return head + (", ..." if len(steps) > 6 else "")


def _clip_coefficients(ctx: Context, ranks: list[int], steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[ranks, steps]: the factor clip_grad_norm_ applied (1 where it did not clip; the product of a
    step's calls), and where it is unknown (clipped by value, or a norm not recorded)."""
    coef = np.ones((len(ranks), len(steps)))
    unknown = np.zeros((len(ranks), len(steps)), dtype=bool)
    i_max, i_tot, i_val = (CLIP_COLUMNS.index(k) for k in ("max_norm", "total_norm", "clip_value"))
    for i, rank in enumerate(ranks):
        c = ctx.run.ranks[rank].steps
        if c is None or not len(c.clip_step) or not len(steps):
            continue
        at = np.minimum(np.searchsorted(steps, c.clip_step), len(steps) - 1)
        on = steps[at] == c.clip_step
        mx, tot, val = c.clip[:, i_max], c.clip[:, i_tot], c.clip[:, i_val]
        bad = np.isfinite(val) | ~(np.isfinite(mx) & np.isfinite(tot))
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.where(~bad & (tot > mx), mx / (tot + 1e-6), 1.0)  # torch's clip coefficient
        np.multiply.at(coef[i], at[on], factor[on])
        np.logical_or.at(unknown[i], at[on], bad[on])
    return coef, unknown


def _nearest_integer_scale(k: float) -> int | None:
    """n ≥ 2 when k ≈ n or k ≈ 1/n (within INT_TOL relative), else None; negative n for 1/n."""
    if not math.isfinite(k) or k <= 0:
        return None
    for value, sign in ((k, 1), (1 / k, -1)):
        n = round(value)
        if n >= 2 and abs(value - n) <= INT_TOL * n:
            return sign * n
    return None


def _scale(ctx: Context) -> Finding:
    fid = "grad-scale-wrong"
    ranks = _with(ctx, "grad_dot_step", "grad_dot_local")
    steps, reduced = _by_step(ctx, "grad_dot_step", ranks)
    steps_l, local = _by_step(ctx, "grad_dot_local", ranks)
    ratios: dict[int, float] = {}
    skipped = 0
    if steps.size and steps_l.size and len(ranks) == reduced.shape[0] == local.shape[0]:
        both = np.intersect1d(steps, steps_l)
        reduced = reduced[:, np.searchsorted(steps, both)]
        local = local[:, np.searchsorted(steps_l, both)]
        present = np.isfinite(reduced) & np.isfinite(local)
        used = present.sum(axis=0) >= 2
        steps, reduced, local, present = both[used], reduced[:, used], local[:, used], present[:, used]
        reduced = np.where(present, reduced, np.nan)
        local = np.where(present, local, np.nan)
        coef, unknown = _clip_coefficients(ctx, ranks, steps)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.nanmean(local, axis=0)
            top = np.nanmax(np.abs(reduced), axis=0)
            spread = np.nanmax(reduced, axis=0) - np.nanmin(reduced, axis=0)
            skip = (
                (present & (unknown | (coef <= 0))).any(axis=0)
                | (np.abs(mean) < MIN_SIGNAL * np.nanmean(np.abs(local), axis=0))
                | (spread > 1e-3 * np.maximum(top, 1e-30))  # not one reduced gradient
            )
            k = np.nanmedian(reduced, axis=0) / mean / np.nanmean(np.where(present, coef, np.nan), axis=0)
        skipped = int(skip.sum())
        ratios = {int(t): float(x) for t, x in zip(steps[~skip].tolist(), k[~skip].tolist())}
    if not ratios:
        reason = _why_not(ctx)
        if skipped:
            reason = Text(
                f"{skipped} recorded step(s), none usable: clipped by value, ranks' gradients not one "
                "reduced gradient, or local values that cancel out.",
                f"记录了 {skipped} 个步，没有可用的：按值裁剪、各 rank 梯度并非同一个归约结果，或本地值相互抵消。",
            )
        return not_measured(fid, reason, steps_skipped=skipped)
    k = float(np.median(list(ratios.values())))
    world = len(ctx.run.ranks)
    ev: dict[str, Any] = dict(
        ratio=k,
        ratio_per_step={str(t): r for t, r in list(ratios.items())[:20]},
        steps_compared=len(ratios),
        steps_skipped=skipped,
        world_size=world,
        threshold=threshold_sentence(fid),
        source="step.grad_dot_step vs the ranks' step.grad_dot_local: Σ⟨g, p⟩ before optimizer.step() and local "
        "(probe/instruments/stepgrads.py)",
    )
    n = _nearest_integer_scale(k)
    if n is not None:
        factor = f"{n}×" if n > 0 else f"1/{-n}×"
        why = ""
        if n == world:
            why = " — the world size: a second all-reduce with SUM (or a `sum` reduction without ÷ world)"
        elif n == -world:
            why = " — 1/world size: the average divided by the world size once more"
        return confirmed(
            fid,
            Text(
                f"The gradient the optimizer steps on is {factor} the average of the ranks' local gradients "
                f"(median ratio {fmt(k)} over {len(ratios)} steps){why}.",
                f"优化器使用的梯度是各 rank 本地梯度平均值的 {factor}（{len(ratios)} 步的中位比值 {fmt(k)}）。",
            ),
            factor=n,
            **ev,
        )
    if abs(k - 1) <= ONE_TOL:
        cov = coverage(
            len(ratios) + skipped,
            max(ctx.optimizer_steps, len(ratios) + skipped),
            Text(
                f"Σ⟨g, p⟩ at every step; {skipped} step(s) not usable"
                if skipped
                else "Σ⟨g, p⟩ at every step",
                f"每步的 Σ⟨g, p⟩；{skipped} 步不可用" if skipped else "每步的 Σ⟨g, p⟩",
            ),
        )
        return ruled_out(
            fid,
            Text(
                f"The gradient the optimizer steps on is the average of the ranks' local gradients "
                f"(median ratio {fmt(k, 4)} over {len(ratios)} steps).",
                f"优化器使用的梯度就是各 rank 本地梯度的平均（{len(ratios)} 步的中位比值 {fmt(k, 4)}）。",
            ),
            coverage=cov,
            **ev,
        )
    return inconclusive(
        fid,
        Text(
            f"The gradient the optimizer steps on is {fmt(k)}× the ranks' average: neither 1 nor an integer "
            "factor (a custom scaling, hook or clip the probe does not see).",
            f"优化器使用的梯度是各 rank 平均值的 {fmt(k)} 倍：既不是 1 也不是整数倍（探针看不到的自定义缩放、钩子或裁剪）。",
        ),
        **ev,
    )
