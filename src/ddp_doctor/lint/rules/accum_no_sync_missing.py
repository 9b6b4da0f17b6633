"""accum-no-sync-missing: a DDP accumulation loop that all-reduces on every micro-step.

DDP all-reduces gradients in every backward unless ``no_sync()`` is entered or
``require_backward_grad_sync`` is False for that forward (torch docs, DDP.no_sync). Syncing every
micro-step wastes bandwidth but gives the same numbers, so this is info, never an error.
Flagged only when the file builds a DDP model (in project mode: or a project helper returns one,
or, for a loop in a module without any wrap such as ``engine.py``, some file of the project wraps
in DDP) and nothing in the file (project) controls gradient sync: ``no_sync``,
``require_backward_grad_sync``, FSDP2's ``set_requires_gradient_sync`` or a sync context helper
(``lint/idioms.py`` SYNC_CONTROL, e.g. EDM's ``misc.ddp_sync``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.idioms import SYNC_CONTROL
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rules.base import Rule, Violation

DDP = "torch.nn.parallel.DistributedDataParallel"


class AccumNoSyncMissing(Rule):
    id = "accum-no-sync-missing"
    required = (("DistributedDataParallel",), ("backward", "scaler", "loss_scaler"))
    required_in_project = (("backward", "scaler", "loss_scaler"),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if facts.prepared or any(SYNC_CONTROL.match(w) for w in ctx.words):
            return
        project = ctx.project
        if project is not None and project.toggles_sync:
            return
        calls = ctx.of_type(ast.Call)
        if not any(ctx.call_qualname(n) == DDP for n in calls):
            if project is None:
                return
            wraps_here = any(project.call_wraps_ddp(ctx, n) for n in calls)
            if not wraps_here and not (project.wraps_plain_ddp and not _wraps_anything(ctx)):
                return
        for loop in facts.accumulation_loops():
            yield self.violation(
                loop.loop,
                f"The accumulation loop at line {loop.loop.lineno} all-reduces gradients on every "
                "micro-step (no `no_sync`): wasted bandwidth, numerically the same.",
                f"第 {loop.loop.lineno} 行的梯度累积循环在每个微步都做 all-reduce（没有 `no_sync`）：浪费带宽，数值上等价。",
                accumulation_loop_line=loop.loop.lineno,
            )


def _wraps_anything(ctx: FileContext) -> bool:
    """The file itself wraps models (DDP, FSDP, DeepSpeed, accelerate, Fabric): then its own wrap decides."""
    return ctx.mentions(
        "DistributedDataParallel", "FullyShardedDataParallel", "fully_shard", "deepspeed"
    ) or (ctx.mentions("prepare", "setup") and ctx.mentions("accelerator", "fabric"))
