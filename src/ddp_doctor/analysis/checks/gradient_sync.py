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


def _digests(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Steps with a grad_digest on ≥ 2 ranks, and for each whether the ranks' digests differ."""
    by_step: dict[int, list[float]] = {}
    for data in ctx.run.ranks.values():
        c = data.steps
        d = c.extra.get("grad_digest") if c is not None else None
        if c is None or d is None:
            continue
        ok = np.isfinite(d) & (c.step >= 0)
        for t, v in zip(c.step[ok].tolist(), d[ok].tolist()):
            by_step.setdefault(int(t), []).append(float(v))
    steps = sorted(t for t, v in by_step.items() if len(v) >= 2)
    differ = np.array(
        [max(by_step[t]) - min(by_step[t]) > REL_TOL * max(abs(max(by_step[t])), 1e-30) for t in steps],
        dtype=bool,
    )
    return np.array(steps, dtype=np.int64), differ


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


def _clip_coefficients(ctx: Context) -> dict[tuple[int, int], float | None]:
    """(rank, step) -> the factor clip_grad_norm_ applied (None: clipped by value, factor unknown)."""
    out: dict[tuple[int, int], float | None] = {}
    i_max, i_tot, i_val = (CLIP_COLUMNS.index(k) for k in ("max_norm", "total_norm", "clip_value"))
    for rank, data in ctx.run.ranks.items():
        c = data.steps
        if c is None or not len(c.clip_step):
            continue
        for step, row in zip(c.clip_step.tolist(), c.clip):
            coef: float | None = out.get((rank, step), 1.0)
            if math.isfinite(row[i_val]) or not (math.isfinite(row[i_max]) and math.isfinite(row[i_tot])):
                coef = None
            elif coef is not None and row[i_tot] > row[i_max]:
                coef *= row[i_max] / (row[i_tot] + 1e-6)  # torch's clip coefficient
            out[(rank, step)] = coef
    return out


def _dots(ctx: Context) -> dict[int, dict[int, tuple[float, float]]]:
    """step -> rank -> (grad_dot_step, grad_dot_local) from the step records."""
    out: dict[int, dict[int, tuple[float, float]]] = {}
    for rank, data in ctx.run.ranks.items():
        c = data.steps
        if c is None or "grad_dot_step" not in c.extra or "grad_dot_local" not in c.extra:
            continue
        ds, dl = c.extra["grad_dot_step"], c.extra["grad_dot_local"]
        ok = np.isfinite(ds) & np.isfinite(dl) & (c.step >= 0)
        for t, a, b in zip(c.step[ok].tolist(), ds[ok].tolist(), dl[ok].tolist()):
            out.setdefault(int(t), {})[rank] = (float(a), float(b))
    return dict(sorted(out.items()))


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
    clip = _clip_coefficients(ctx)
    ratios: dict[int, float] = {}
    skipped = 0
    for t, by_rank in _dots(ctx).items():
        ranks = sorted(by_rank)
        if len(ranks) < 2:
            continue
        local = np.array([by_rank[r][1] for r in ranks])
        reduced = np.array([by_rank[r][0] for r in ranks])
        coefs = [clip.get((r, t), 1.0) for r in ranks]
        mean = float(local.mean())
        top = float(np.abs(reduced).max())
        if (
            any(c is None or c <= 0 for c in coefs)
            or abs(mean) < MIN_SIGNAL * float(np.abs(local).mean())
            or float(reduced.max() - reduced.min()) > 1e-3 * max(top, 1e-30)  # not one reduced gradient
        ):
            skipped += 1
            continue
        coef = float(np.mean([c for c in coefs if c is not None]))
        ratios[t] = float(np.median(reduced)) / mean / coef
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
