"""The configuration that picks a BatchNorm model, when only some of the candidates hold BatchNorm.

A model picked at run time (``eval(cfg['NAME'])`` over star imports, ``models.__dict__[name]``,
``import_module('models.' + name).MainModel``) is reported when the candidate set says it can hold
BatchNorm (``batchnorm_unsynced.py``). When every candidate builds BatchNorm the finding is plain;
when only some do, it exists for the configurations that pick one of those, so the finding is
config-gated on the expression that picks (``model_cfg['NAME'] names a BatchNorm model (6 of 7
candidates)``), one severity level down, like a conversion behind an opt-in flag.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.model_picks import bound_callee, pick_key
from ddp_doctor.lint.project import ProjectIndex
from ddp_doctor.lint.project_modules import absolute_module, relative_base
from ddp_doctor.lint.project_summary import Summary, is_class_summary


def pick_gate(ctx: FileContext, project: ProjectIndex, call: ast.Call) -> str | None:
    pick = bound_callee(ctx, call)
    found = _chooser_and_candidates(ctx, project, pick)
    if found is None:
        return None
    chooser, candidates = found
    # the models among them: classes, and functions that build BatchNorm or project code (a
    # ``resnet50()`` builder), not helpers made of torch layers alone (``conv3x3``)
    candidates = [c for c in candidates if is_class_summary(c) or c.builds_batchnorm or c.callees]
    k, n = sum(c.builds_batchnorm for c in candidates), len(candidates)
    if not candidates or k in (0, n):
        return None
    return f"{ctx.segment(chooser)} names a BatchNorm model ({k} of {n} candidates)"


def _chooser_and_candidates(
    ctx: FileContext, project: ProjectIndex, pick: ast.AST
) -> tuple[ast.AST, list[Summary]] | None:
    key = pick_key(ctx, pick)
    if key is not None and isinstance(pick, ast.Call):
        return pick.args[0], project.pick_candidates(key)
    if isinstance(pick, ast.Call) and isinstance(pick.func, ast.Name) and pick.args:
        chooser = pick.args[0]
        if pick.func.id == "eval" and not isinstance(chooser, ast.Constant):
            module = ctx.module or ""
            stars = [
                m
                for node in ctx.of_type(ast.ImportFrom)
                if any(a.name == "*" for a in node.names)
                and (m := project.resolve_module(absolute_module(node, relative_base(ctx, module)) or ""))
                and project.module_builds_batchnorm(m)
            ]
            return chooser, [c for m in stars for c in project.module_candidates(m)]
        if pick.func.id == "getattr" and len(pick.args) >= 2 and not isinstance(pick.args[1], ast.Constant):
            return _registry(ctx, project, pick.args[0], pick.args[1])
    if (
        isinstance(pick, ast.Subscript)
        and isinstance(pick.value, ast.Attribute)
        and pick.value.attr == "__dict__"
    ):
        return _registry(ctx, project, pick.value.value, pick.slice)
    return None


def _registry(
    ctx: FileContext, project: ProjectIndex, registry: ast.AST, chooser: ast.AST
) -> tuple[ast.AST, list[Summary]] | None:
    qual = ctx.qualname(registry) or ""
    module = project.resolve_module(qual) if qual else None
    return (chooser, project.module_candidates(module)) if module is not None else None
