"""Calls that return the ``nn.Module`` they are given, so a name keeps its model through them.

``model.to(device)``, ``model.cuda().train()``, ``model.requires_grad_(False)``: ``nn.Module``'s
moves, casts and mode switches return ``self``. ``SyncBatchNorm.convert_sync_batchnorm(model)``
returns the same top module with its BatchNorm children swapped: the same model for
compile-before-ddp (still compiled), a different one for the BatchNorm questions (converted, no
longer unsynced), so seeing through it is the caller's choice. One definition for the rules and
the project index (batchnorm-unsynced, compile-before-ddp, find-unused-true's untrained wraps,
lint/handed_models.py, the backward objects of lint/project.py).
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext

SAME_MODULE_METHODS = frozenset(
    {"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "eval", "requires_grad_"}
)
SYNCBN_CONVERSION = "torch.nn.SyncBatchNorm.convert_sync_batchnorm"


def unmoved(ctx: FileContext, expr: ast.AST, *, through_syncbn: bool = False) -> ast.AST:
    """The module expression under ``m.to(device).cuda()`` (``m``), and with ``through_syncbn``
    under ``SyncBatchNorm.convert_sync_batchnorm(m)``; ``expr`` itself otherwise. A method of a
    value only (``m.cuda()``), not a function reached by name (``torch.cuda(...)``)."""
    while isinstance(expr, ast.Call):
        if through_syncbn and ctx.call_qualname(expr) == SYNCBN_CONVERSION and expr.args:
            expr = expr.args[0]
        elif (
            isinstance(expr.func, ast.Attribute)
            and expr.func.attr in SAME_MODULE_METHODS
            and ctx.qualname(expr.func) is None
        ):
            expr = expr.func.value
        else:
            break
    return expr


def moved_result(ctx: FileContext, expr: ast.AST) -> ast.AST:
    """The outermost move of ``expr`` (``build(cfg).cuda().train()`` for ``build(cfg)``): what a
    name bound to it, or a ``return`` of it, holds; ``expr`` itself when it is not moved."""
    while True:
        attr = ctx.parents.get(expr)
        call = ctx.parents.get(attr) if attr is not None else None
        if not (
            isinstance(attr, ast.Attribute)
            and attr.value is expr
            and attr.attr in SAME_MODULE_METHODS
            and isinstance(call, ast.Call)
            and call.func is attr
        ):
            return expr
        expr = call
