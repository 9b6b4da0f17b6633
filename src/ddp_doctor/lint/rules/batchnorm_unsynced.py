"""batchnorm-unsynced: BatchNorm layers in a model that this file wraps in DDP, never converted.

Under DDP each rank normalises with its local micro-batch statistics (torch docs, SyncBatchNorm:
"use SyncBatchNorm to synchronise statistics across processes"), so small per-GPU batches give
noisy, rank-dependent normalisation. Flagged only when the same file both builds BatchNorm
layers (or a torchvision model known to contain them) and wraps a model in DDP, and never
calls ``SyncBatchNorm.convert_sync_batchnorm`` nor builds ``SyncBatchNorm``: a model imported
from elsewhere is not guessed at. Autofix: convert the wrapped model just before wrapping.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rules.base import Rule, Violation, insert_line_before, starts_own_line, statement_of

DDP = "torch.nn.parallel.DistributedDataParallel"
BATCHNORM = re.compile(r"^torch\.nn\.(BatchNorm[123]d|LazyBatchNorm[123]d)$")
# torchvision constructors whose models contain BatchNorm layers (torchvision.models source).
TORCHVISION_BN = re.compile(
    r"^torchvision\.models\.(resnet|resnext|wide_resnet|densenet|mobilenet|efficientnet|"
    r"vgg\d+_bn|regnet|inception_v3|googlenet|shufflenet|mnasnet)\w*$"
)
SYNC = "torch.nn.SyncBatchNorm"


class BatchnormUnsynced(Rule):
    id = "batchnorm-unsynced"
    required = (("DistributedDataParallel",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if not self.applies(ctx):
            return
        bn_lines: list[int] = []
        ddp_calls: list[ast.Call] = []
        if ctx.mentions("SyncBatchNorm") or any(q.endswith(".SyncBatchNorm") for q in ctx.imports.values()):
            return  # SyncBatchNorm is used somewhere: the author knows about it
        for node in ctx.of_type(ast.Call):
            q = ctx.call_qualname(node) or ""
            if BATCHNORM.match(q) or TORCHVISION_BN.match(q):
                bn_lines.append(node.lineno)
            elif q == DDP:
                ddp_calls.append(node)
        if not bn_lines or not ddp_calls:
            return
        for call in ddp_calls:
            yield self.violation(
                call,
                f"BatchNorm layers (line {', '.join(map(str, sorted(bn_lines)[:5]))}) are wrapped in DDP without "
                "SyncBatchNorm: each rank normalises with its own micro-batch statistics.",
                f"BatchNorm 层（第 {', '.join(map(str, sorted(bn_lines)[:5]))} 行）被 DDP 包装却未转换为 SyncBatchNorm。",
                edits=self._fix(ctx, call),
                batchnorm_lines=sorted(bn_lines),
            )

    def _fix(self, ctx: FileContext, call: ast.Call) -> tuple:
        model = dotted(call.args[0]) if call.args else None
        stmt = statement_of(ctx, call)
        prefix = _torch_nn_prefix(ctx)
        if model is None or stmt is None or prefix is None or not starts_own_line(ctx, stmt):
            return ()
        return (
            insert_line_before(
                ctx, stmt, f"{model} = {prefix}.SyncBatchNorm.convert_sync_batchnorm({model})"
            ),
        )


def _torch_nn_prefix(ctx: FileContext) -> str | None:
    """How this file spells ``torch.nn`` (``torch.nn`` or an ``nn`` alias), if it imports it."""
    for alias, target in ctx.imports.items():
        if target == "torch.nn":
            return alias
    return "torch.nn" if ctx.imports.get("torch") == "torch" else None
