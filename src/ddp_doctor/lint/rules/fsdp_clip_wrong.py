"""fsdp-clip-wrong: ``torch.nn.utils.clip_grad_norm_`` on a model wrapped by FSDP1.

An FSDP1 (``FullyShardedDataParallel``) model holds only this rank's shard of each flat
parameter, so the function computes a per-rank norm and every rank clips differently; FSDP1's
own ``model.clip_grad_norm_`` all-reduces the norm (torch docs, FullyShardedDataParallel.
clip_grad_norm_). FSDP2 ``fully_shard`` parameters are DTensors and the torch function is
correct there, so FSDP2 code is never flagged. NO_SHARD FSDP1 holds full parameters: not flagged.
Autofix: ``clip_grad_norm_(m.parameters(), n)`` → ``m.clip_grad_norm_(n)``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, keyword, method
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rules.base import Rule, Violation, replace_node

FSDP1 = "torch.distributed.fsdp.FullyShardedDataParallel"
CLIP = "torch.nn.utils.clip_grad_norm_"


class FsdpClipWrong(Rule):
    id = "fsdp-clip-wrong"
    flagged = (
        "`torch.nn.utils.clip_grad_norm_(m.parameters(), ...)` where `m` was assigned an FSDP1 "
        "`FullyShardedDataParallel(...)`"
    )
    not_flagged = (
        "FSDP2 `fully_shard` (DTensor parameters: the torch function is correct), "
        "`m.clip_grad_norm_`, `NO_SHARD`"
    )
    autofix = "rewrites to `m.clip_grad_norm_(...)`"
    required = (("FullyShardedDataParallel",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        wrapped: set[str] = set()
        for node in ctx.of_type(ast.Assign):
            if (
                isinstance(node.value, ast.Call)
                and ctx.call_qualname(node.value) == FSDP1
                and not _no_shard(node.value)
            ):
                wrapped |= {d for t in node.targets if (d := dotted(t))}
        if not wrapped:
            return
        for call in ctx.of_type(ast.Call):
            if ctx.call_qualname(call) != CLIP or not call.args:
                continue
            m = method(call.args[0])
            if m and m[1] == "parameters" and m[0] in wrapped:
                rest = [ctx.segment(a) for a in call.args[1:]] + [ctx.segment(k) for k in call.keywords]
                fix = (
                    replace_node(ctx, call, f"{m[0]}.clip_grad_norm_({', '.join(rest)})")
                    if all(rest)
                    else None
                )
                yield self.violation(
                    call,
                    Text(
                        f"torch.nn.utils.clip_grad_norm_ on the FSDP1 model `{m[0]}` sees only this rank's shard; "
                        f"use `{m[0]}.clip_grad_norm_(...)`.",
                        f"对 FSDP1 模型 `{m[0]}` 调用 torch.nn.utils.clip_grad_norm_ 只看到本 rank 的分片；"
                        f"请用 `{m[0]}.clip_grad_norm_(...)`。",
                    ),
                    edits=(fix,) if fix else (),
                    module=m[0],
                )


def _no_shard(call: ast.Call) -> bool:
    strategy = keyword(call, "sharding_strategy")
    return strategy is not None and (dotted(strategy) or "").endswith("NO_SHARD")
