"""Hypothesis `ddp-config`: find_unused_parameters, bucket_cap_mb, gradient_as_bucket_view.

All three are read from the `ddp` config record. find-unused-true and ddp-bucket-config are info:
they change speed and memory, not the numerics (PyTorch DDP docs and design notes). find-unused-true
is "confirmed" (a real cost, without confirming the hypothesis, see
:mod:`ddp_doctor.analysis.diagnose`); ddp-bucket-config is a plain fact: status ``observed``, never
listed among the problems.
unused-parameters: the names in the last `unused` record of each rank (written at exit).
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.analysis.context import Context, deepspeed_owns_weights
from ddp_doctor.analysis.make import confirmed, not_measured, observed, ruled_out
from ddp_doctor.core.catalog import Text
from ddp_doctor.core.findings import Finding

NO_DDP = "No DDP wrapper was recorded."
NO_DDP_ZH = "未记录到 DDP 包装器。"


# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("find-unused-true", "unused-parameters", "ddp-bucket-config")


def check(ctx: Context) -> list[Finding]:
    return [_find_unused(ctx), _unused(ctx), _buckets(ctx)]


def _find_unused(ctx: Context) -> Finding:
    fid, ddp = "find-unused-true", ctx.config("ddp")
    if ddp is None:
        return not_measured(fid, Text(NO_DDP, NO_DDP_ZH))
    value = ddp.get("find_unused_parameters")
    if value:
        return confirmed(
            fid,
            Text(
                "DDP was built with find_unused_parameters=True: an extra autograd-graph "
                "walk per step (speed, not accuracy).",
                "DDP 使用了 find_unused_parameters=True：每步多一次 autograd 图遍历（影响速度，不影响精度）。",
            ),
            find_unused_parameters=True,
        )
    return ruled_out(
        fid,
        Text(f"find_unused_parameters={value}.", f"find_unused_parameters={value}。"),
        find_unused_parameters=value,
    )


def _unused(ctx: Context) -> Finding:
    fid = "unused-parameters"
    last = {r: d.unused[-1] for r, d in ctx.run.ranks.items() if d.unused}
    engine = deepspeed_owns_weights(ctx.run)
    if not last and engine is not None:
        return not_measured(
            fid,
            Text(
                f"Unused parameters are not recorded on this setup ({engine}).",
                f"此设置下不记录未使用的参数（{engine}）。",
            ),
        )
    if not last:
        return not_measured(
            fid,
            Text(
                "No `unused` record (written after the first optimizer step).",
                "没有 `unused` 记录（在第一个优化步之后写入）。",
            ),
        )
    names = sorted({n for rec in last.values() for n in rec.get("names") or ()})
    ev: dict[str, Any] = dict(names=names[:50], count=len(names), ranks_reporting=sorted(last))
    if names:
        return confirmed(
            fid,
            Text(
                f"{len(names)} trainable parameter(s) never received a gradient: "
                f"{', '.join(names[:5])}{' …' if len(names) > 5 else ''}.",
                f"{len(names)} 个可训练参数从未得到梯度：{', '.join(names[:5])}。",
            ),
            **ev,
        )
    return ruled_out(
        fid, Text("Every trainable parameter received a gradient.", "所有可训练参数都得到了梯度。"), **ev
    )


def _buckets(ctx: Context) -> Finding:
    fid, ddp = "ddp-bucket-config", ctx.config("ddp")
    if ddp is None:
        return not_measured(fid, Text(NO_DDP, NO_DDP_ZH))
    keys = ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph", "broadcast_buffers")
    ev = {k: ddp.get(k) for k in keys}
    return observed(
        fid,
        Text(
            f"bucket_cap_mb={ev['bucket_cap_mb']}, gradient_as_bucket_view="
            f"{ev['gradient_as_bucket_view']}, static_graph={ev['static_graph']} (no effect on the "
            "numerics).",
            f"bucket_cap_mb={ev['bucket_cap_mb']}，gradient_as_bucket_view="
            f"{ev['gradient_as_bucket_view']}，static_graph={ev['static_graph']}（不影响数值）。",
        ),
        **ev,
    )
