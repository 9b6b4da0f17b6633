"""Which methods a ``self.f(...)`` call may run: the caller's class's own ``f`` and every override
of it in the file's subclasses of that class.

A base class's training loop calls ``self.get_batch_metrics(batch)``, declared in the base to
raise ``NotImplementedError`` and overridden by each trainer (HALOs' SFT, DPO, KTO, GRPO ...).
What the call returns is what any of those overrides returns: value provenance must merge their
shapes, not read the base's (which returns nothing) nor guess from the target's name. Only
classes of the same file, found by the names of their bases (``class KTOTrainer(
UnpairedPreferenceTrainer)``, transitively).
"""

from __future__ import annotations

import ast
import weakref

from ddp_doctor.lint.context import FileContext, FunctionNode, dotted


def override_defs(ctx: FileContext, call: ast.Call) -> list[FunctionNode]:
    """The definitions ``self.f(...)`` may run when subclasses of the caller's class in this file
    override ``f`` (the caller's own ``f`` first, dropped when it only raises
    ``NotImplementedError``); empty when no subclass overrides it (``ctx.helper`` decides then)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return []
    defs = ctx.functions.get(func.attr, [])
    if len(defs) < 2:
        return []
    owner = ctx.enclosing_method_class(call)
    if owner is None:
        return []
    family = _subclass_names(ctx).get(owner.name, set()) | {owner.name}
    found = [
        d
        for d in defs
        if isinstance(cls := ctx.parents.get(d), ast.ClassDef)
        and ctx.parents.get(cls) is ctx.tree
        and cls.name in family
    ]
    if not any(ctx.parents.get(d) is not owner for d in found):
        return []  # no subclass overrides it
    return [d for d in found if not abstract(d)]


_SUBCLASSES: weakref.WeakKeyDictionary[ast.Module, dict[str, set[str]]] = weakref.WeakKeyDictionary()


def _subclass_names(ctx: FileContext) -> dict[str, set[str]]:
    """Top-level class name -> the names of the top-level classes of the file deriving from it
    (through the last part of their bases' names, transitively); computed once per file."""
    found = _SUBCLASSES.get(ctx.tree)
    if found is not None:
        return found
    children: dict[str, set[str]] = {}
    for c in ctx.of_type(ast.ClassDef):
        if ctx.parents.get(c) is ctx.tree:
            for b in c.bases:
                children.setdefault((dotted(b) or "").split(".")[-1], set()).add(c.name)
    out: dict[str, set[str]] = {}
    for name in children:
        seen: set[str] = set()
        frontier = set(children[name])
        while frontier:
            seen |= frontier
            frontier = {k for f in frontier for k in children.get(f, ())} - seen
        out[name] = seen - {name}
    _SUBCLASSES[ctx.tree] = out
    return out


def abstract(fn: FunctionNode) -> bool:
    """A declaration only: its body (after a docstring) raises ``NotImplementedError`` or is ``...``
    / ``pass``."""
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1:
        return not body
    stmt = body[0]
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
        return True
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return dotted(exc) == "NotImplementedError"
    return False
