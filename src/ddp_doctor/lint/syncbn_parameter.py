"""A SyncBatchNorm conversion a def does only when one of its parameters says so.

Group-Free-3D's detector ends its ``__init__`` with ``if self.sync_bn:
nn.SyncBatchNorm.convert_sync_batchnorm(self)``, ``sync_bn`` a constructor parameter; the trainer
builds it with ``sync_bn=True if args.syncbn else False`` (``--syncbn`` off by default). Whether
the model it builds is converted is the caller's argument, not the class's: the project index
keeps the parameter (``Summary.syncbn_param``) and batchnorm-unsynced reads each call's argument
(``converted_by_argument``): a true constant or default converts, a false one does not, anything
else (a flag) leaves it unsynced when that value is false (config-gated).
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, keyword, param_defaults


def conversion_parameter(ctx: FileContext, call: ast.Call) -> tuple[str, int, bool] | None:
    """``(name, position, default)`` of the parameter of the def enclosing ``call`` that an ``if``
    around it tests (``if sync_bn:`` or ``if self.sync_bn:``, the attribute named as the
    parameter); None when the conversion is not guarded by a parameter."""
    fn = ctx.enclosing_function(call)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    args = [*fn.args.posonlyargs, *fn.args.args]
    names = [a.arg for a in args]
    if names and names[0] in ("self", "cls"):
        args, names = args[1:], names[1:]
    defaults = param_defaults(fn)
    child: ast.AST = call
    cur = ctx.parents.get(call)
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and any(child is b for b in cur.body):
            test = cur.test
            name = test.id if isinstance(test, ast.Name) else None
            if (
                isinstance(test, ast.Attribute)
                and isinstance(test.value, ast.Name)
                and test.value.id == "self"
            ):
                name = test.attr
            kwonly = [a.arg for a in fn.args.kwonlyargs]
            if name is not None and (name in names or name in kwonly):
                default = defaults.get(name)
                on = isinstance(default, ast.Constant) and bool(default.value)
                return name, names.index(name) if name in names else -1, on
        child, cur = cur, ctx.parents.get(cur)
    return None


def converted_by_argument(ctx: FileContext, call: ast.Call, param: tuple[str, int, bool]) -> bool | str:
    """Does this call of a def with ``param`` convert? True/False, or the condition (a string) under
    which it does not."""
    name, position, default = param
    arg = keyword(call, name)
    if (
        arg is None
        and 0 <= position < len(call.args)
        and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1])
    ):
        arg = call.args[position]
    if arg is None:
        return default
    if isinstance(arg, ast.Constant):
        return bool(arg.value)
    if isinstance(arg, ast.IfExp) and all(isinstance(b, ast.Constant) for b in (arg.body, arg.orelse)):
        # ``True if args.syncbn else False``: the test decides
        arg = arg.test if bool(arg.body.value) else ast.UnaryOp(op=ast.Not(), operand=arg.test)  # type: ignore[attr-defined]
    if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.Not):
        return f"{ctx.segment(arg.operand)} true"
    return f"{ctx.segment(arg)} false"
