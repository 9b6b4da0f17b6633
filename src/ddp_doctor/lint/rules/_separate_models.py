"""BatchNorm built into a model that no DDP wrap of the file is handed (batchnorm-unsynced precision).

LatentSync's trainer builds ``syncnet_eval_model = SyncNetEval(device=device)`` (a BatchNorm
network it only evaluates with) and, apart, wraps ``unet = DDP(unet, ...)`` where ``unet`` came from
``UNet3DConditionModel.from_pretrained(...)``. The file "builds BatchNorm and wraps in DDP", but not
the same model: the wrapped model holds no BatchNorm that SyncBatchNorm would have to share.

Decided only on positive evidence, within the function that wraps: every BatchNorm-building call
sits in the value of a plain ``name = ...`` assignment of that function, every wrap is a
``DistributedDataParallel(...)`` call (not a project helper that wraps, whose model argument is
not written at the call) handed a plain name (``DDP(unet)``, ``DDP(unet.to(device))``), and
following each wrapped name back through the names its bindings hand on (any number of hops: ``enc = Enc(backbone)``; ``model = Net(enc)``;
not a name read only into arithmetic, text or a shape), no BatchNorm model is reached as an
object. One reached only through a value read off it (``embed_dim = model.embed_dim``) counts as
separate only when the function puts it in ``eval()`` and nothing in the file puts it back in
``train()``: DINO's linear probe sizes the wrapped classifier from its frozen backbone. (A model
handed whole into the wrapped one is in it even when put in ``eval()``: the wrapper's ``train()``
switches it back.) BatchNorm built in another function, in an attribute (``self.model = ...``,
``model.head = ...``) or inline keeps the finding.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.idioms import DDP
from ddp_doctor.lint.module_moves import unmoved
from ddp_doctor.lint.provenance import DESCRIBE_ATTRS


def batchnorm_in_other_models(ctx: FileContext, wraps: list[ast.Call], built: list[ast.AST]) -> bool:
    """The BatchNorm-building calls ``built`` all feed models other than those ``wraps`` wrap."""
    if not wraps or not built:
        return False
    scopes = {id(ctx.enclosing_function(w)) for w in wraps}
    if len(scopes) != 1:
        return False
    scope = ctx.enclosing_function(wraps[0])
    binds = ctx.bindings(scope)
    holders: list[ast.Assign] = []
    for node in built:
        found = _holders(ctx, node, scope)
        if found is None:
            return False
        holders += found
    wrapped: set[str] = set()
    for w in wraps:
        if ctx.call_qualname(w) != DDP:
            return False  # a project helper that wraps (efficientvit ``trainer.prep_for_training(cfg)``):
            # which of its arguments holds the model is not written at the call
        arg = unmoved(ctx, w.args[0]) if w.args else None
        if not isinstance(arg, ast.Name):
            return False
        wrapped.add(arg.id)
    last = max(w.lineno for w in wraps)
    whole = _spans(ctx, binds, wrapped, last, whole=True)  # the objects the wraps hold
    parts = _spans(ctx, binds, wrapped, last, whole=False)  # ... and what they read off others
    for h in holders:
        at = ctx.position(h.value)
        if any(lo <= at < hi for lo, hi in whole):
            return False  # the BatchNorm model is (in) a wrapped one
        if any(lo <= at < hi for lo, hi in parts) and not all(
            isinstance(t, ast.Name) and _evaluated_only(ctx, scope, t.id) for t in h.targets
        ):
            return False  # a part of it may be handed on (``Enc(backbone.features)``)
        # else: not reached, or only a value read off a model frozen in eval() (DINO's linear probe
        # reads the frozen backbone's ``embed_dim`` to size the wrapped classifier)
    return True


def _spans(
    ctx: FileContext, binds: dict[str, list[ast.stmt | ast.expr]], names: set[str], last: int, whole: bool
) -> list[tuple[int, int]]:
    """Node spans of the values bound (before line ``last``) to ``names`` and, hop by hop, to the
    names those values hand on (``whole``: only names handed as objects, not ``model.attr``)."""
    reached: set[str] = set()
    frontier = set(names)
    values: list[ast.expr] = []
    while frontier:
        reached |= frontier
        bound = [
            b.value
            for n in frontier
            for b in binds.get(n, [])
            if isinstance(b, ast.Assign) and b.lineno <= last
        ]
        values += bound
        frontier = {n for v in bound for n in _handed_names(ctx, v, whole)} - reached
    return [(ctx.position(v), ctx.subtree_end(v)) for v in values]


ARITHMETIC = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.JoinedStr)


def _handed_names(ctx: FileContext, value: ast.expr, whole: bool) -> set[str]:
    """Names whose object ``value`` may hold: not those read only into arithmetic, text or a shape
    (``model.fc.weight.shape[1]`` hands on a number, not the backbone); with ``whole``, only names
    handed as themselves (``Wrapper(backbone)``, not ``backbone.embed_dim``)."""
    out: set[str] = set()
    for x in ast.walk(value):
        if not isinstance(x, ast.Name):
            continue
        parent = ctx.parents.get(x)
        if whole and isinstance(parent, ast.Attribute) and parent.value is x:
            continue
        cur = ctx.parents.get(x)
        while cur is not None and cur is not value and not _describes(cur):
            cur = ctx.parents.get(cur)
        if cur is None or not _describes(cur):
            out.add(x.id)
    return out


def _holders(ctx: FileContext, node: ast.AST, scope: ast.AST) -> list[ast.Assign] | None:
    """The assignments of ``scope`` that hold what ``node`` builds: its own, or, for BatchNorm built
    inside a class or function of the file (``class SyncNetEval``), those of every use of that
    class's name, when each use is a call in ``scope`` assigned to plain names. None otherwise."""
    top = _outermost_def(ctx, node)
    if top is None or top is _outermost_def(ctx, scope) or top is scope:
        holder = _assignment_of(ctx, node, scope)
        return [holder] if holder is not None else None
    uses = [n for n in ctx.of_type(ast.Name) if n.id == top.name]
    out: list[ast.Assign] = []
    for use in uses:
        call = ctx.parents.get(use)
        if not (isinstance(call, ast.Call) and call.func is use):
            return None
        holder = _assignment_of(ctx, call, scope)
        if holder is None:
            return None
        out.append(holder)
    return out or None


def _outermost_def(
    ctx: FileContext, node: ast.AST
) -> ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None:
    cur = ctx.parents.get(node)
    top: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None = None
    while cur is not None:
        if isinstance(cur, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            top = cur
        cur = ctx.parents.get(cur)
    return top


def _evaluated_only(ctx: FileContext, scope: ast.AST, name: str) -> bool:
    """``scope`` calls ``name.eval()`` and nothing in the file calls ``name.train()``."""
    calls = [
        c
        for c in ctx.of_type(ast.Call)
        if isinstance(c.func, ast.Attribute) and c.func.attr in ("eval", "train")
    ]
    named = [
        c
        for c in calls
        if isinstance(c.func, ast.Attribute)
        and isinstance(c.func.value, ast.Name)
        and c.func.value.id == name
    ]
    return any(
        c.func.attr == "eval" and ctx.enclosing_function(c) is scope  # type: ignore[attr-defined]
        for c in named
    ) and not any(c.func.attr == "train" for c in named)  # type: ignore[attr-defined]


def _describes(node: ast.AST) -> bool:
    """Arithmetic, text, or a property of a tensor/module (``model.fc.weight.shape[1]``)."""
    return isinstance(node, ARITHMETIC) or (isinstance(node, ast.Attribute) and node.attr in DESCRIBE_ATTRS)


def _assignment_of(ctx: FileContext, node: ast.AST, scope: ast.AST) -> ast.Assign | None:
    """The ``name = ...`` statement of ``scope`` whose value holds ``node`` (through calls and
    attributes: ``SyncNet(...).to(device)``), when its targets are plain names."""
    cur = ctx.parents.get(node)
    while cur is not None and isinstance(cur, (ast.Call, ast.Attribute, ast.keyword)):
        cur = ctx.parents.get(cur)
    if (
        isinstance(cur, ast.Assign)
        and all(isinstance(t, ast.Name) for t in cur.targets)
        and ctx.enclosing_function(cur) is scope
    ):
        return cur
    return None
