"""PyTorch-Ignite: handlers that run once per call of an engine's process function.

``trainer = Engine(train)`` calls ``train(engine, batch)`` once per iteration; a handler
registered for ``Events.ITERATION_COMPLETED`` / ``ITERATION_STARTED`` without a filter
(``@trainer.on(Events.ITERATION_COMPLETED)``, ``trainer.add_event_handler(Events.ITERATION_COMPLETED,
fn)``) runs on every such call. When ``train`` is an accumulation step function (one micro-step
per call), what the handler does unconditionally happens on every micro-step. A filtered event
(``Events.ITERATION_COMPLETED(every=50)``) is a call and is not followed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, dotted

ENGINES = frozenset({"ignite.engine.Engine", "ignite.engine.engine.Engine"})
PER_ITERATION = frozenset({"ITERATION_COMPLETED", "ITERATION_STARTED"})


def _per_iteration(ctx: FileContext, event: ast.expr) -> bool:
    """``Events.ITERATION_COMPLETED`` of ignite (unfiltered)."""
    if not isinstance(event, ast.Attribute) or event.attr not in PER_ITERATION:
        return False
    owner = ctx.qualname(event.value) or ""
    return owner.startswith("ignite.") and owner.endswith("Events")


def _engines_of(ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names bound to ``Engine(fn)`` in the file."""
    out: set[str] = set()
    for assign in ctx.of_type(ast.Assign):
        call = assign.value
        if (
            isinstance(call, ast.Call)
            and ctx.call_qualname(call) in ENGINES
            and call.args
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == fn.name
        ):
            out |= {d for t in assign.targets if (d := dotted(t))}
    return out


def per_micro_step_handlers(
    ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef
) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Same-file functions an ``Engine(fn)`` runs after (or before) every call of ``fn``."""
    engines = _engines_of(ctx, fn)
    if not engines:
        return
    for handler in ctx.of_type(ast.FunctionDef) + ctx.of_type(ast.AsyncFunctionDef):
        for deco in handler.decorator_list:
            if (
                isinstance(deco, ast.Call)
                and isinstance(deco.func, ast.Attribute)
                and deco.func.attr == "on"
                and dotted(deco.func.value) in engines
                and deco.args
                and _per_iteration(ctx, deco.args[0])
            ):
                yield handler
    for call in ctx.of_type(ast.Call):
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "add_event_handler"
            and dotted(func.value) in engines
            and len(call.args) >= 2
            and _per_iteration(ctx, call.args[0])
            and isinstance(call.args[1], ast.Name)
        ):
            handler_def = ctx.scoped_def(call, call.args[1].id) or next(
                iter(ctx.functions.get(call.args[1].id, [])), None
            )
            if handler_def is not None:
                yield handler_def
