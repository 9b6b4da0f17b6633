"""A DDP wrap the run throws away before anything uses it (find-unused-true, batchnorm-unsynced,
accum-no-sync-missing precision).

A wrap whose object no forward ever runs through sets up no reducer: its
``find_unused_parameters`` traverses nothing, its BatchNorm layers train as the bare model's, and
no backward all-reduces through it. Two shapes are recognised, both on positive evidence only:

- the very next statement rebinds the wrap's name to something that is not the wrap:
  ``model = DDP(model, ...)`` then ``model = model.module`` (SAM-Adapter's train.py) or ``model =
  other``. ``model = torch.compile(model)`` or ``model_without_ddp = model.module`` keep it (the
  first reads the wrap, the second binds another name and keeps ``model``);
- the wrap is only returned (``return DDP(m)``, or ``models = DDP(models)`` read afterwards only by
  ``return models[, ...]``), from a project def every call of which, in the whole project, is a
  bare expression statement (pretrain-300M's ``manager.init_training(model, optimizer)``: the
  trainer keeps training the model it built). Needs the project index (``call_arguments``).
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, dotted, next_in_block, other_branch


def discarded_wrap(ctx: FileContext, call: ast.Call) -> bool:
    """The object ``call`` (a DDP wrap) builds is thrown away before any use (module docstring)."""
    holder = _holder(ctx, call)
    if isinstance(holder, ast.Return):
        return _result_discarded(ctx, holder)
    if not (isinstance(holder, ast.Assign) and len(holder.targets) == 1):
        return False
    target = dotted(holder.targets[0])
    if target is None:
        return False
    if _rebound_next(ctx, holder, target):
        return True
    return (
        isinstance(holder.targets[0], ast.Name)
        and _only_returned(ctx, holder, target)
        and _result_discarded(ctx, holder)
    )


def _holder(ctx: FileContext, call: ast.Call) -> ast.AST | None:
    """The statement the wrap's value goes to: through a list comprehension of wraps (``[DDP(m) for
    m in models]``) or a conditional expression, to its assignment or return."""
    node: ast.AST = call
    parent = ctx.parents.get(node)
    while isinstance(parent, (ast.ListComp, ast.IfExp)) and node is not getattr(parent, "test", None):
        if isinstance(parent, ast.ListComp) and node is not parent.elt:
            return None
        node, parent = parent, ctx.parents.get(parent)
    if isinstance(parent, (ast.Assign, ast.Return)) and parent.value is node:
        return parent
    return None


def _rebound_next(ctx: FileContext, stmt: ast.Assign, target: str) -> bool:
    """The statement right after ``stmt`` in its block binds ``target`` again to the wrap's inner
    module (``model = model.module``) or to a value that does not read ``target`` at all."""
    nxt = next_in_block(ctx, stmt)
    if not (isinstance(nxt, ast.Assign) and len(nxt.targets) == 1 and dotted(nxt.targets[0]) == target):
        return False
    value = nxt.value
    if isinstance(value, ast.Attribute) and value.attr == "module" and dotted(value.value) == target:
        return True
    return not any(dotted(n) == target for n in ast.walk(value) if isinstance(n, (ast.Name, ast.Attribute)))


def _only_returned(ctx: FileContext, stmt: ast.Assign, name: str) -> bool:
    """After ``stmt`` (not in a loop) the function reads ``name`` only as a returned value or an
    item of a returned tuple."""
    fn = ctx.enclosing_function(stmt)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    cur = ctx.parents.get(stmt)
    while cur is not None and cur is not fn:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            return False  # a later iteration reads the wrap before the assignment
        cur = ctx.parents.get(cur)
    end = ctx.subtree_end(stmt)
    returned = False
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        if ctx.position(node) < end or other_branch(ctx, node, stmt):
            continue  # its own argument, or the ``else`` branch that wraps another way
        parent = ctx.parents.get(node)
        if isinstance(parent, ast.Tuple):
            parent = ctx.parents.get(parent)
        if not isinstance(parent, ast.Return):
            return False
        returned = True
    return returned


def _result_discarded(ctx: FileContext, stmt: ast.stmt) -> bool:
    """The def returning the wrap is a project function, or a method of a class with no outside base
    (a framework may call a hook by name and keep its result), and every call of it the project
    makes throws the result away."""
    project, module = ctx.project, ctx.module
    fn = ctx.enclosing_function(stmt)
    if project is None or module is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    owner = ctx.parents.get(fn)
    if isinstance(owner, ast.ClassDef):
        if not isinstance(ctx.parents.get(owner), ast.Module):
            return False
        local = {n.name for n in ctx.tree.body if isinstance(n, ast.ClassDef)}
        if any(not (isinstance(b, ast.Name) and (b.id in local or b.id == "object")) for b in owner.bases):
            return False
        return bool(project.result_discarded(fn, module, in_class=True))
    if not isinstance(owner, ast.Module):
        return False
    return bool(project.result_discarded(fn, module, in_class=False))
