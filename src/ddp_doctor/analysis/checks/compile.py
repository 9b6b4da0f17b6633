"""Hypothesis `compile`: does torch.compile interact badly with DDP?

* compile-numerics (level full): `compile_check` records compare the compiled forward with eager
  on the same input. Different beyond noise = max_abs > max(:data:`NOISE_FACTOR` × the eager
  run-to-run difference, :data:`ATOL`); ATOL is the default tolerance of torch._dynamo's own
  accuracy comparison (``torch._dynamo.utils.same``, tol=1e-4).
* compile-before-ddp: the `compile` config record's ``order``; info (both orders are supported).
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, not_measured, ruled_out
from ddp_doctor.core.catalog import Text, limit, threshold_sentence
from ddp_doctor.core.findings import Finding

NOISE_FACTOR = limit("compile-numerics", "noise_factor")
ATOL = limit("compile-numerics", "atol")


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("compile-numerics", "compile-before-ddp")


def check(ctx: Context) -> list[Finding]:
    return [_numerics(ctx), _order(ctx)]


def _numerics(ctx: Context) -> Finding:
    fid, cfg = "compile-numerics", ctx.config("compile")
    if cfg is None:
        return ruled_out(fid, Text("torch.compile was not used.", "未使用 torch.compile。"), compiled=False)
    recs = [rec for d in ctx.run.ranks.values() for rec in d.compile_check]
    if not recs:
        return not_measured(
            fid,
            Text(
                "The model is compiled but compiled-vs-eager checks need `ddp-doctor run --level full`.",
                "模型已编译，但编译与 eager 的对比需要 `ddp-doctor run --level full`。",
            ),
            compiled=True,
            level=ctx.level,
        )
    worst = max(recs, key=lambda r: float(r.get("max_abs") or 0.0))
    max_abs = float(worst.get("max_abs") or 0.0)
    base = max(float(rec.get("baseline_abs") or 0.0) for rec in recs)
    tol = max(NOISE_FACTOR * base, ATOL)
    ev: dict[str, Any] = dict(
        max_abs=max_abs,
        max_rel=worst.get("max_rel"),
        baseline_abs=base,
        step=worst.get("step"),
        checks=len(recs),
        threshold=threshold_sentence(fid) + Text(f" (here {tol:g})", f"（此处为 {tol:g}）"),
    )
    if max_abs > tol:
        return confirmed(
            fid,
            Text(
                f"The compiled forward differs from eager by {max_abs:.2g} (eager run-to-run "
                f"{base:.2g}) at step {worst.get('step')}.",
                f"编译后的前向与 eager 相差 {max_abs:.2g}"
                f"（eager 自身差异 {base:.2g}），出现在第 {worst.get('step')} 步。",
            ),
            **ev,
        )
    return ruled_out(
        fid,
        Text(
            f"Compiled vs eager max difference {max_abs:.2g} ≤ {tol:.2g} in {len(recs)} checks.",
            f"{len(recs)} 次检查中编译与 eager 的最大差异为 {max_abs:.2g} ≤ {tol:.2g}。",
        ),
        **ev,
    )


def _order(ctx: Context) -> Finding:
    fid, cfg = "compile-before-ddp", ctx.config("compile")
    if cfg is None:
        return ruled_out(fid, Text("torch.compile was not used.", "未使用 torch.compile。"), compiled=False)
    order = cfg.get("order")
    ev = dict(order=order, target=cfg.get("target"), backend=cfg.get("backend"), mode=cfg.get("mode"))
    if order == "before_ddp":
        return confirmed(
            fid,
            Text(
                "torch.compile was applied before DDP wrapping (supported; info).",
                "在 DDP 包装之前调用了 torch.compile（受支持；仅供参考）。",
            ),
            **ev,
        )
    return ruled_out(fid, Text(f"torch.compile order: {order}.", f"torch.compile 的顺序：{order}。"), **ev)
