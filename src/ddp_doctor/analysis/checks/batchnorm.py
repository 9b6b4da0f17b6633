"""Hypothesis `batchnorm`: BatchNorm statistics not synced across ranks.

The `ddp` config record lists `_BatchNorm` modules that are not SyncBatchNorm; any such module
under DDP normalises with local-micro-batch statistics only (PyTorch docs, ``SyncBatchNorm``).
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import confirmed, not_measured, ruled_out
from ddp_doctor.core.catalog import Text
from ddp_doctor.core.findings import Finding

# The catalog IDs check() returns (diagnose skips a check none of whose findings the data can feed).
FINDS = ("batchnorm-unsynced",)


def check(ctx: Context) -> list[Finding]:
    fid, ddp = "batchnorm-unsynced", ctx.config("ddp")
    if ddp is None or "batchnorm" not in ddp:
        return [not_measured(fid, Text("No DDP module description was recorded.", "未记录到 DDP 模块描述。"))]
    names = list(ddp.get("batchnorm") or [])
    ev: dict[str, Any] = dict(modules=names, syncbatchnorm=ddp.get("syncbatchnorm"))
    if names:
        return [
            confirmed(
                fid,
                Text(
                    f"{len(names)} BatchNorm layer(s) without SyncBatchNorm under DDP: {', '.join(names[:5])}.",
                    f"DDP 下有 {len(names)} 个 BatchNorm 层未使用 SyncBatchNorm：{', '.join(names[:5])}。",
                ),
                **ev,
            )
        ]
    return [
        ruled_out(
            fid,
            Text(
                "No unsynchronised BatchNorm layer in the DDP module.",
                "DDP 模块中没有未同步的 BatchNorm 层。",
            ),
            **ev,
        )
    ]
