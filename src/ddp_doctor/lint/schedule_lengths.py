"""What a learning-rate schedule's length is counted in, read from how the scheduler is built.

scheduler-per-microstep asks this of a scheduler stepped on every micro-step: when its lengths
come from the number of batches an epoch has (``num_training_steps = len(train_loader) * epochs``,
``epochs * (len(dataset) // batch_size)``, ``num_image // total_batch_size * num_epoch``) and the
accumulation count takes no part in them, the schedule is counted in micro-batches, so one
``step()`` per micro-batch runs it over exactly the training it was sized for (dialog_model,
OpenChemFold, arcface_torch). Sized in optimizer steps (``len(loader) // accum * epochs``) or by a
constant (``warmup=3000``), the same call runs it accumulation-count times too fast.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, dotted

# How many assignments deep a length is followed (``steps = len(dl)``; ``total = steps * epochs``).
DEPTH = 4


def schedule_counts_batches(ctx: FileContext, receiver: str, count: ast.expr) -> bool:
    """Every scheduler assigned to ``receiver`` in this file is built with a length taken from the
    batches of an epoch, and the accumulation count ``count`` takes no part in building it."""
    builds = [
        a.value
        for a in ctx.of_type(ast.Assign)
        if isinstance(a.value, ast.Call) and any(dotted(t) == receiver for t in a.targets)
    ]
    if not builds:
        return False
    accum = _last_name(count)
    for call in builds:
        nodes = list(_length_nodes(ctx, call))
        if not any(_counts_batches(n) for n in nodes):
            return False
        if accum is None or any(_last_name(n) == accum for n in nodes):
            return False
    return True


def _length_nodes(ctx: FileContext, call: ast.Call) -> Iterator[ast.AST]:
    """The nodes of ``call``'s arguments, of the values the names among them were assigned (in the
    calling function; ``self.x`` / ``cfg.x`` anywhere in the file), and of the scheduler built by the
    same-file helper ``call`` runs (``get_scheduler(cfg, optimizer, total_steps)``)."""
    scope = ctx.enclosing_function(call)
    yield from _expanded(ctx, scope, [*call.args, *(k.value for k in call.keywords)], DEPTH, set())
    helper = ctx.helper(call)
    if helper is not None:
        for inner in ctx.local(helper):
            if isinstance(inner, ast.Call) and inner is not call:
                yield from _expanded(
                    ctx, helper, [*inner.args, *(k.value for k in inner.keywords)], DEPTH, set()
                )


def _expanded(
    ctx: FileContext, scope: ast.AST, exprs: list[ast.expr], depth: int, seen: set[str]
) -> Iterator[ast.AST]:
    for expr in exprs:
        for node in ast.walk(expr):
            yield node
            name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if depth == 0 or name is None or name in seen:
                continue
            seen.add(name)
            yield from _expanded(ctx, scope, _assigned(ctx, scope, node, name), depth - 1, seen)


def _assigned(ctx: FileContext, scope: ast.AST, node: ast.AST, name: str) -> list[ast.expr]:
    """The values ``name`` is assigned: a plain name in ``scope``, an attribute in the whole file."""
    if isinstance(node, ast.Name):
        # ``bindings`` also lists ``self.x = ...`` under ``self``: only the name itself is its value
        assigns = [b for b in ctx.bindings(scope).get(name, []) if isinstance(b, ast.Assign)]
    else:
        assigns = ctx.of_type(ast.Assign)
    return [a.value for a in assigns if any(dotted(t) == name for t in a.targets)]


def _counts_batches(node: ast.AST) -> bool:
    """A number of batches: ``len(loader)``, a count divided by a batch size, ``num_batches``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div)):
        return any("batch" in (_last_name(n) or "").lower() for n in ast.walk(node.right))
    return "num_batches" in (_last_name(node) or "").lower()


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _last_name(node.func)
    return None
