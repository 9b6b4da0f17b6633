"""What a call to a same-file helper logs of its arguments (project summaries, ``logged_params``).

A logger class often writes through its own small helper: vilbert's ``tbLogger.step_train(epoch,
step, loss, ...)`` calls ``self.linePlot(step, loss, split, key)``, whose ``self.logger.add_scalar(
..., val, step)`` is the log call. ``step_train`` logs its ``loss`` parameter as surely as if it
called ``add_scalar`` itself. The helper is found as ``ctx.helper`` finds it (``f(...)`` or
``self.f(...)``, unambiguous in the file); its own logged parameters come from the caller's
summariser (``logged_of``), so the reading stays one definition.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ddp_doctor.lint.context import FileContext

LoggedOf = Callable[[ast.FunctionDef | ast.AsyncFunctionDef], tuple[tuple[str, ...], tuple[str, ...]]]


def helper_logged_args(
    ctx: FileContext, call: ast.AST, caller: ast.AST, logged_of: LoggedOf
) -> list[ast.expr] | None:
    """The arguments of ``call`` that the same-file helper it runs logs; None when ``call`` runs no
    such helper (or the helper logs none of its parameters)."""
    if not isinstance(call, ast.Call):
        return None
    helper = ctx.helper(call)
    if helper is None or helper is caller:
        return None
    logged, params = logged_of(helper)
    if not logged:
        return None
    rest = any(p.startswith("*") and not p.startswith("**") for p in logged)
    spread = any(p.startswith("**") for p in logged)
    out: list[ast.expr] = []
    for i, arg in enumerate(call.args):
        if (
            isinstance(arg, ast.Starred)
            or (i < len(params) and params[i] in logged)
            or (i >= len(params) and rest)
        ):
            out.append(arg)
    for k in call.keywords:
        if (k.arg is not None and k.arg in logged) or (spread and (k.arg is None or k.arg not in params)):
            out.append(k.value)
    return out or None


def constructed_method(ctx: FileContext, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The same-file method ``obj.m(...)`` runs when every binding of ``obj`` in the calling scope
    builds an instance of one class defined (once) in this file (``logger = Logger(writer)`` ...
    ``logger.push(metrics)``; ``FileContext.constructors``): file mode's reading of project mode's
    constructed objects."""
    funcs = ctx.constructors(call)
    names = {f.id if isinstance(f, ast.Name) else None for f in funcs or []}
    if len(names) != 1 or None in names:
        return None
    name = names.pop()
    classes = [c for c in ctx.of_type(ast.ClassDef) if isinstance(c, ast.ClassDef) and c.name == name]
    if len(classes) != 1:
        return None
    assert isinstance(call.func, ast.Attribute)  # constructors() found bindings: ``obj.m(...)``
    found = [
        f
        for f in classes[0].body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == call.func.attr
    ]
    return found[0] if len(found) == 1 else None
