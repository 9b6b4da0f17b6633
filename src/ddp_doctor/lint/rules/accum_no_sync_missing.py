"""accum-no-sync-missing: a DDP accumulation loop that all-reduces on every micro-step.

DDP all-reduces gradients in every backward unless ``no_sync()`` is entered or
``require_backward_grad_sync`` is False for that forward (torch docs, DDP.no_sync). Syncing every
micro-step wastes bandwidth but gives the same numbers, so this is info, never an error.
Flagged only when the file builds a DDP model and nothing in the file mentions ``no_sync``,
``require_backward_grad_sync`` or FSDP2's ``set_requires_gradient_sync``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rules.base import Rule, Violation

DDP = "torch.nn.parallel.DistributedDataParallel"
SYNC_CONTROLS = {"no_sync", "require_backward_grad_sync", "set_requires_gradient_sync"}


class AccumNoSyncMissing(Rule):
    id = "accum-no-sync-missing"
    required = (("DistributedDataParallel",), ("backward",))

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if not self.applies(ctx):
            return
        if facts.prepared or ctx.mentions(*SYNC_CONTROLS):
            return
        if not any(ctx.call_qualname(n) == DDP for n in ctx.of_type(ast.Call)):
            return
        for loop in facts.accumulation_loops():
            yield self.violation(
                loop.loop,
                f"The accumulation loop at line {loop.loop.lineno} all-reduces gradients on every "
                "micro-step (no `no_sync`): wasted bandwidth, numerically the same.",
                f"第 {loop.loop.lineno} 行的梯度累积循环在每个微步都做 all-reduce（没有 `no_sync`）：浪费带宽，数值上等价。",
                accumulation_loop_line=loop.loop.lineno,
            )
