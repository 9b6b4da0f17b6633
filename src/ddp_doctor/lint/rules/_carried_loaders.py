"""Where a loader travels inside one file before a loop draws from it (set-epoch-missing).

A trainer class is handed its loader: ``Trainer(data_loaders=init_data_loaders(...))`` whose
``__init__`` keeps ``self.train_loader = data_loaders``, and whose ``train_epoch`` iterates
``self.train_loader``; the epoch loop is the caller's ``for epoch in ...: trainer.train_epoch(epoch)``
(BiRefNet ``train.py``). Two steps are followed, each within the file:

* ``carried_loaders``: the names a loader reaches through helpers that return it (also returned
  again by a caller) and through the constructor of a class of the file that stores the argument
  on ``self``;
* ``caller_epoch_loop``: a loop with no loop around it in its own method is run once per pass of
  the loop around every call of that method, when that loop walks epochs.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, dotted, init_of, positional_params
from ddp_doctor.lint.rules._data import enclosing_loop

ROUNDS = 3  # helper -> helper -> constructor: BiRefNet's chain is three calls long


def carried_loaders(ctx: FileContext, names: set[str]) -> set[str]:
    """Names (``x`` or ``self.x``) that hold one of ``names``' loaders after they are returned by
    the functions that hold them and handed to the constructor of a class of this file."""
    out = set(names)
    carriers: dict[int, ast.Call] = {}  # calls whose value is the loader (helpers returning it)
    for _ in range(ROUNDS):
        returning = {
            id(fn)
            for r in ctx.of_type(ast.Return)
            if r.value is not None
            and (
                dotted(r.value) in out
                or id(r.value) in carriers
                or (isinstance(r.value, ast.Tuple) and any(dotted(e) in out for e in r.value.elts))
            )
            for fn in (ctx.enclosing_function(r),)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        grew = False
        for call in ctx.of_type(ast.Call):
            fn = ctx.helper(call)
            if fn is None or id(fn) not in returning or id(call) in carriers:
                continue
            carriers[id(call)] = call
            grew = True
            parent = ctx.parents.get(call)
            if isinstance(parent, ast.Assign) and parent.value is call:
                out |= {d for t in parent.targets if (d := dotted(t)) is not None}
                out |= _unpacked(ctx, fn, parent, out)
        if not grew:
            break
    return out | _stored_by_constructors(ctx, out, set(carriers))


def _unpacked(ctx: FileContext, fn: ast.AST, assign: ast.Assign, names: set[str]) -> set[str]:
    """``train_set, train_loader = get_dataloader(...)`` where every ``return`` of the helper that
    is a tuple of that length holds a loader name at one position (``return dataset, dataloader``):
    the name unpacked at that position."""
    targets = [t for t in assign.targets if isinstance(t, ast.Tuple)]
    out: set[str] = set()
    for ret in ctx.local(fn):
        if not isinstance(ret, ast.Return) or not isinstance(ret.value, ast.Tuple):
            continue
        for target in targets:
            if len(target.elts) != len(ret.value.elts):
                continue
            for elt, value in zip(target.elts, ret.value.elts, strict=True):
                if dotted(value) in names and (d := dotted(elt)) is not None:
                    out.add(d)
    return out


def _stored_by_constructors(ctx: FileContext, names: set[str], carried: set[int]) -> set[str]:
    """``self.x`` for each ``C(..., loader, ...)`` of a class ``C`` of this file whose ``__init__``
    stores that parameter as ``self.x = param``."""
    classes = {c.name: c for c in ctx.tree.body if isinstance(c, ast.ClassDef)}
    out: set[str] = set()
    if not classes:
        return out
    for call in ctx.of_type(ast.Call):
        if not isinstance(call.func, ast.Name) or call.func.id not in classes:
            continue
        init = init_of(classes[call.func.id])
        if init is None:
            continue
        params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]  # without self
        handed: set[str] = set()
        for i, arg in enumerate(call.args):
            if i < len(params) and (dotted(arg) in names or id(arg) in carried):
                handed.add(params[i])
        for k in call.keywords:
            if k.arg is not None and (dotted(k.value) in names or id(k.value) in carried):
                handed.add(k.arg)
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in handed:
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and dotted(t.value) == "self":
                        out.add(f"self.{t.attr}")
    return out


def caller_epoch_loop(ctx: FileContext, loop: ast.AST) -> ast.For | ast.AsyncFor | ast.While | None:
    """The epoch loop around the calls of the method holding ``loop`` (``for epoch in ...:
    trainer.train_epoch(epoch)``), when that method's name is defined once in the file and every
    call of it sits in such a loop."""
    fn = ctx.enclosing_function(loop)
    if (
        not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        or len(ctx.functions.get(fn.name, [])) != 1
    ):
        return None
    calls = [
        c
        for c in ctx.of_type(ast.Call)
        if (
            (isinstance(c.func, ast.Attribute) and c.func.attr == fn.name)
            or (isinstance(c.func, ast.Name) and c.func.id == fn.name)
        )
        and _can_bind(fn, c)
    ]
    outers = [enclosing_loop(ctx, c) for c in calls]
    if not outers or any(o is None or not walks_epochs(ctx, o) for o in outers):
        return None
    return outers[0]


def _can_bind(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> bool:
    """``call`` passes enough arguments for ``fn``'s required parameters: ``self.model.train()`` (no
    argument) is not a call of a trainer's ``def train(self, epoch)``, it is ``nn.Module.train``."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    params = positional_params(fn, bound=isinstance(call.func, ast.Attribute))
    required = len(params) - len(fn.args.defaults)
    given = len(call.args) + sum(1 for k in call.keywords if k.arg in params)
    return given >= required


def walks_epochs(ctx: FileContext, loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """``for epoch in range(...)`` / ``for ep in range(args.epochs)``: the loop names epochs."""
    if isinstance(loop, ast.While):
        return "epoch" in ctx.segment(loop.test).lower()
    return "epoch" in ctx.segment(loop.target).lower() or "epoch" in ctx.segment(loop.iter).lower()
