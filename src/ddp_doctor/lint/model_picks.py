"""A model class picked by a name chosen at run time: where the pick looks, and what it names.

A trainer rarely writes the class it builds: ``eval('models.' + cfg.MODEL.NAME + '.get_pose_net')``
(HigherHRNet), ``getattr(importlib.import_module(f'pkg.models.{name}'), 'Network')`` (hysts),
``importlib.import_module('models.' + model).__getattribute__('MainModel')`` (voxceleb_trainer),
often through a name first (``net = models.__dict__[name]`` ... ``net(num_classes=n)``, YouReID).
The name is configuration, but the package searched and the builder's own name are written: the
candidates are the project defs so named under that package (``ProjectIndex.picked_candidates``),
and the pick builds BatchNorm when most of them do. Used both by the project index (a class whose
``__init__`` builds such a pick holds its BatchNorm) and by batchnorm-unsynced in the file itself.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ddp_doctor.lint.context import FileContext, positional_params, walk_local


def bound_callee(ctx: FileContext, call: ast.Call) -> ast.AST:
    """What ``call`` calls: its target, or, for a local name bound once before it in the same
    function (``net = models.__dict__[name]`` ... ``net(...)``), the expression it was bound to."""
    func = call.func
    if not isinstance(func, ast.Name):
        return func
    binds = ctx.bindings(ctx.enclosing_function(call)).get(func.id, [])
    if len(binds) == 1 and isinstance(binds[0], ast.Assign) and binds[0].lineno < call.lineno:
        value = binds[0].value
        if len(binds[0].targets) == 1 and isinstance(binds[0].targets[0], ast.Name):
            return value
    return func


def package_and_name(ctx: FileContext, func: ast.AST) -> tuple[str, str] | None:
    """``eval('pkg.' + x + '.name')`` → ("pkg", "name"); ``getattr(M, 'name')`` or
    ``M.__getattribute__('name')`` with ``M`` an ``importlib.import_module('pkg.' ...)`` (or a local
    bound to one) → ("pkg", "name")."""
    if isinstance(func, ast.Attribute):
        # ``importlib.import_module(cfg.model).Net`` (OpenChemFold): the module is configuration, the
        # builder's name is written; a module named wholly at run time searches the whole project ("")
        imported = _import_module_call(ctx, func.value, func)
        parts = template(imported.args[0]) if imported is not None and imported.args else None
        if imported is None or not imported.args or isinstance(imported.args[0], ast.Constant):
            return None
        return (parts[0].rstrip(".") if parts and len(parts) >= 2 else ""), func.attr
    if not isinstance(func, ast.Call) or len(func.args) < 1:
        return None
    if isinstance(func.func, ast.Name) and func.func.id == "eval":
        parts = template(func.args[0])
        if parts is None or len(parts) < 3 or not parts[0].endswith(".") or not parts[-1].startswith("."):
            return None
        package, name = parts[0].rstrip("."), parts[-1].lstrip(".")
        head = package.split(".")[0]
        if head not in ctx.imports or not name.isidentifier():
            return None
        return ctx.imports[head] + package[len(head) :], name
    if isinstance(func.func, ast.Name) and func.func.id == "getattr" and len(func.args) >= 2:
        owner, attr = func.args[0], func.args[1]
    elif isinstance(func.func, ast.Attribute) and func.func.attr in ("__getattribute__", "__getattr__"):
        owner, attr = func.func.value, func.args[0]
    else:
        return None
    if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
        return None
    imported = _import_module_call(ctx, owner, func)
    if imported is None:
        return None
    parts = template(imported.args[0]) if imported.args else None
    if parts is None or len(parts) < 2:
        return None
    return parts[0].rstrip("."), attr.value


def pick_key(ctx: FileContext, func: ast.AST) -> str | None:
    """``"package|name"`` of the pick ``func`` makes (``package_and_name``): the form in which the
    project index keeps a pick in a summary's refs and answers for it (``split_pick_key``)."""
    found = package_and_name(ctx, func)
    return None if found is None else f"{found[0]}|{found[1]}"


def split_pick_key(key: str) -> tuple[str, str]:
    """``(package, name)`` of a ``pick_key``."""
    package, _, name = key.partition("|")
    return package, name


def _import_module_call(ctx: FileContext, expr: ast.AST, at: ast.AST) -> ast.Call | None:
    if isinstance(expr, ast.Name):  # ``module = importlib.import_module(...)`` earlier in the function
        binds = [
            b
            for b in ctx.bindings(ctx.enclosing_function(at)).get(expr.id, [])
            if isinstance(b, ast.Assign) and b.lineno <= getattr(at, "lineno", 0)
        ]
        expr = binds[-1].value if binds else expr
    if isinstance(expr, ast.Call) and ctx.call_qualname(expr) == "importlib.import_module":
        return expr
    return None


def template(expr: ast.AST) -> list[str] | None:
    """The literal pieces of a string built at run time, with "" where a value goes:
    ``'models.' + name + '.get_pose_net'`` → ["models.", "", ".get_pose_net"]; None for a plain
    literal (nothing is chosen) or anything that is not a string expression."""
    pieces: list[str] = []

    def walk(e: ast.AST) -> bool:
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            pieces.append(e.value)
            return True
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            return walk(e.left) and walk(e.right)
        if isinstance(e, ast.JoinedStr):
            for v in e.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    pieces.append(v.value)
                else:
                    pieces.append("")
            return True
        if isinstance(e, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            pieces.append("")
            return True
        return False

    if not walk(expr) or "" not in pieces:
        return None
    merged: list[str] = []
    for p in pieces:  # adjacent literals are one literal; adjacent values one value
        if merged and (p == "") == (merged[-1] == "") and p != "":
            merged[-1] += p
        elif not (merged and p == "" and merged[-1] == ""):
            merged.append(p)
    return merged


def handed_pick_param(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The position (among the parameters a call fills, a method's ``self`` left out) of the
    parameter ``M`` when ``fn`` returns an instance of a def of ``M`` picked by a name known at run
    time: ``return getattr(M, cfg[name]['type'])(*args, **cfg[name]['args'])`` (pytorch-template's
    ``ConfigParser.init_obj(name, module)``, deeplabv3plus's ``get_instance(module, name, config)``),
    also through a local bound to the pick. The module searched is the caller's: ``get_instance(models,
    'arch', config)`` picks among ``models``' defs."""
    params = positional_params(fn)
    picks: dict[str, str] = {}  # local -> the parameter it picks from
    found: set[str] = set()
    for node in walk_local(fn.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            owner = _picked_param(node.value, params)
            if owner is not None:
                picks[node.targets[0].id] = owner
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            func = node.value.func
            owner = picks.get(func.id) if isinstance(func, ast.Name) else _picked_param(func, params)
            if owner is not None:
                found.add(owner)
    return params.index(found.pop()) if len(found) == 1 else None


def _picked_param(expr: ast.AST, params: list[str]) -> str | None:
    """``getattr(M, key)`` with ``M`` one of ``params`` and ``key`` not a literal: ``M``."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "getattr"
        and len(expr.args) == 2
        and isinstance(expr.args[0], ast.Name)
        and expr.args[0].id in params
        and not isinstance(expr.args[1], ast.Constant)
    ):
        return expr.args[0].id
    return None


def picked_module(
    ctx: FileContext, call: ast.Call, position: int, resolve: Callable[[str], str | None]
) -> str | None:
    """The project module ``call`` hands at ``position`` (``handed_pick_param``): ``models`` in
    ``get_instance(models, 'arch', config)`` after ``import models``; None for anything else."""
    if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]) or position >= len(call.args):
        return None
    qual = ctx.qualname(call.args[position])
    return resolve(qual) if qual else None
