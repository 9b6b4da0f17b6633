"""A DDP wrap of a module that no optimizer of its file updates (batchnorm-unsynced precision).

GPEN wraps its identity loss ``id_loss = DDP(IDLoss(...))`` next to the generator and the
discriminator; ``IDLoss`` holds an ArcFace backbone (BatchNorm) that it puts in ``eval()``, and
the file's optimizers take ``generator.parameters()`` and ``discriminator.parameters()`` only. A
frozen loss network has no trained BatchNorm whose statistics SyncBatchNorm would have to share.

The wrap is taken as untrained only on positive evidence: the file builds optimizers, each built
from names this file binds (``Adam(generator.parameters())``, or ``params`` assigned from such
names: followed one hop), none of which is the wrapped name, and at least one optimizer names some
other wrapped model. An optimizer built from anything else (a parameter, a helper's result that
names nothing) keeps the finding.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.loops import OPTIMIZER_CTORS
from ddp_doctor.lint.module_moves import unmoved


def untrained_wrap(ctx: FileContext, call: ast.Call, wraps: list[ast.Call]) -> bool:
    """``call`` (a DDP wrap) wraps a name that no optimizer of the file is built from, while the
    file's optimizers name another wrapped model (see the module docstring)."""
    wrapped = _wrapped_name(ctx, call)
    if wrapped is None:
        return False
    optimizers = [c for c in ctx.of_type(ast.Call) if OPTIMIZER_CTORS.match(ctx.call_qualname(c) or "")]
    if not optimizers:
        return False
    others = {n for w in wraps if w is not call and (n := _wrapped_name(ctx, w)) is not None and n != wrapped}
    named_any_other = False
    for opt in optimizers:
        names = _names_followed(ctx, opt)
        if names is None or wrapped in names:
            return False
        named_any_other |= bool(names & others)
    return named_any_other


def _wrapped_name(ctx: FileContext, call: ast.Call) -> str | None:
    arg = unmoved(ctx, call.args[0]) if call.args else None
    return arg.id if isinstance(arg, ast.Name) else None


def _names_followed(ctx: FileContext, opt: ast.Call) -> set[str] | None:
    """Names the optimizer's parameters argument reads, each local name followed one hop through its plain
    assignments in this file; None when a name read has no such assignment and is no model name
    of the file (a parameter handed in: what it holds is unknown)."""
    # what the optimizer updates is its first argument (``params=``); ``lr=args.lr`` names no model
    first = opt.args[0] if opt.args else next((k.value for k in opt.keywords if k.arg == "params"), None)
    if first is None:
        return None
    direct = {n.id for n in ast.walk(first) if isinstance(n, ast.Name)}
    assigned: dict[str, list[ast.expr]] = {}
    for node in ctx.of_type(ast.Assign):
        for t in node.targets:
            if isinstance(t, ast.Name):
                assigned.setdefault(t.id, []).append(node.value)
    # param groups gathered into a list first (incrementvideo's ``hs_policies = []`` then
    # ``hs_policies.append({'params': hs_model.parameters(), ...})``): what is added is what it holds
    for call in ctx.of_type(ast.Call):
        f = call.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr in ("append", "extend", "insert")
            and isinstance(f.value, ast.Name)
        ):
            assigned.setdefault(f.value.id, []).extend(call.args)
    out = set(direct)
    for name in direct:
        for value in assigned.get(name, []):
            out |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if name not in assigned:
            return None
    return out
