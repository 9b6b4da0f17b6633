"""Finding `fsdp-clip-wrong` (no hypothesis of its own): clip_grad_norm_ on a sharded FSDP1 model.

At run time the probe sees clip calls and the FSDP version, not which clip function was called,
so an FSDP1 run with clip calls is inconclusive (the lint rule decides it); no FSDP1, no finding.
"""

from __future__ import annotations

from ddp_doctor.analysis.context import Context
from ddp_doctor.analysis.make import inconclusive, ruled_out
from ddp_doctor.findings import Finding


def check(ctx: Context) -> list[Finding]:
    fid, cfg = "fsdp-clip-wrong", ctx.config("fsdp")
    if cfg is None or cfg.get("version") != 1:
        return [
            ruled_out(
                fid,
                "No FSDP1 model: the FSDP1 clipping pitfall cannot occur.",
                "没有 FSDP1 模型：不会出现 FSDP1 的裁剪问题。",
                fsdp_version=cfg.get("version") if cfg else None,
            )
        ]
    clips = sum(len(d.steps.clip_step) for d in ctx.run.ranks.values() if d.steps is not None)
    if clips == 0:
        return [
            ruled_out(
                fid,
                "FSDP1 without gradient clipping.",
                "FSDP1 未使用梯度裁剪。",
                fsdp_version=1,
                clip_calls=0,
            )
        ]
    return [
        inconclusive(
            fid,
            f"FSDP1 with {clips} clip calls: which clip function was used is not "
            "visible at run time; run `ddp-doctor lint` on the script.",
            f"FSDP1 下有 {clips} 次裁剪调用：运行时无法看出使用的是哪个裁剪函数；请运行 `ddp-doctor lint`。",
            fsdp_version=1,
            clip_calls=clips,
        )
    ]
