"""A model built by a name chosen at run time inside a project package (project mode).

HigherHRNet builds ``eval('models.' + cfg.MODEL.NAME + '.get_pose_net')(cfg, ...)``; hysts'
pytorch_image_classification does ``module = importlib.import_module('pytorch_image_classification
.models' f'.{config.model.type}.{config.model.name}')`` then ``getattr(module, 'Network')(config)``.
The name is configuration, but the package and the builder's own name are written: the candidates
are the project defs named so under that package, and when most of them build BatchNorm, so does
the call (the same majority rule as registries of BatchNorm models).
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.project import ProjectIndex


def builds_batchnorm_by_name(ctx: FileContext, project: ProjectIndex, call: ast.Call) -> bool:
    found = _package_and_name(ctx, call.func)
    if found is None:
        return False
    package, name = found
    module = project.resolve_module(package)
    # an ambiguous package name (HigherHRNet's ``models``: ``lib.models`` and ``lib.config.models``)
    # stands for each package so named; the builder's own name picks among them
    packages = [module] if module is not None else [m for m in project.modules if m.endswith("." + package)]
    candidates = [
        s
        for q, s in project.summaries.items()
        if q.rsplit(".", 1)[-1] == name and any(q.startswith(p + ".") and s.module != p for p in packages)
    ]
    return bool(candidates) and 2 * sum(s.builds_batchnorm for s in candidates) > len(candidates)


def _package_and_name(ctx: FileContext, func: ast.AST) -> tuple[str, str] | None:
    """``eval('pkg.' + x + '.name')`` → ("pkg", "name"); ``getattr(M, 'name')`` with ``M`` an
    ``importlib.import_module('pkg.' ...)`` (or a local bound to one) → ("pkg", "name")."""
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and len(func.args) >= 1:
        if func.func.id == "eval":
            parts = _template(func.args[0])
            if parts is None or len(parts) < 3 or not parts[0].endswith(".") or not parts[-1].startswith("."):
                return None
            package, name = parts[0].rstrip("."), parts[-1].lstrip(".")
            head = package.split(".")[0]
            if head not in ctx.imports or not name.isidentifier():
                return None
            return ctx.imports[head] + package[len(head) :], name
        if func.func.id == "getattr" and len(func.args) >= 2:
            attr = func.args[1]
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                return None
            imported = _import_module_call(ctx, func.args[0], func)
            if imported is None:
                return None
            parts = _template(imported.args[0]) if imported.args else None
            if parts is None or len(parts) < 2:
                return None
            return parts[0].rstrip("."), attr.value
    return None


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


def _template(expr: ast.AST) -> list[str] | None:
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
