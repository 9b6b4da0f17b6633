"""An Accelerator built only to wrap a frozen model: its DDP kwargs never reach a training step.

A trainer that caches a reference model's outputs (HALOs' ``reference_accelerator``, a teacher for
distillation) builds a second ``Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(
find_unused_parameters=True)])`` and hands it, with a model it has put in ``eval()`` or frozen with
``requires_grad_(False)``, to the code that prepares it. No backward runs through that model, so
DDP's per-step graph traversal (what ``find-unused-true`` costs) never happens there.

Only on positive evidence, all in the function that builds the Accelerator: it is bound to a plain
name, that name is never returned, stored elsewhere, given to ``backward``/``accumulate``/``no_sync``,
and every call that receives it (``acc.prepare(...)`` or ``Wrapper(acc, model, ...)``) also receives
a model frozen before the call and never switched back to ``train()`` in the function.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ddp_doctor.lint.context import FileContext, dotted

FREEZING = frozenset({"eval", "requires_grad_"})
TRAINING_USES = frozenset({"backward", "accumulate", "no_sync", "autocast", "clip_grad_norm_"})


def wraps_frozen_model_only(ctx: FileContext, kwargs_call: ast.Call) -> bool:
    """``kwargs_call`` (a ``DistributedDataParallelKwargs(...)``) configures an Accelerator that only
    prepares frozen models (see the module docstring)."""
    accelerator = _accelerator_name(ctx, kwargs_call)
    if accelerator is None:
        return False
    scope = ctx.enclosing_function(kwargs_call)
    nodes = ctx.local(scope)
    frozen = frozen_names(nodes)
    receivers: list[ast.Call] = []
    for node in nodes:
        if not (isinstance(node, ast.Name) and node.id == accelerator):
            continue
        parent = ctx.parents.get(node)
        if isinstance(parent, ast.Attribute):
            call = ctx.parents.get(parent)
            if parent.attr in TRAINING_USES:
                return False
            if parent.attr == "prepare" and isinstance(call, ast.Call) and call.func is parent:
                receivers.append(call)
            continue  # ``acc.print(...)``, ``acc.state.fsdp_plugin``: not a hand-over
        if isinstance(parent, ast.keyword):
            parent = ctx.parents.get(parent)
        if isinstance(parent, ast.Call) and node is not parent.func:
            receivers.append(parent)
            continue
        if isinstance(parent, ast.Assign) and node in parent.targets:
            continue  # the binding itself
        return False  # returned, stored on ``self``, put in a container: used beyond this function
    if not receivers:
        return False
    for call in receivers:
        handed = {a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)}
        if not any(frozen.get(name, 10**9) < call.lineno for name in handed):
            return False
    return True


def _accelerator_name(ctx: FileContext, kwargs_call: ast.Call) -> str | None:
    """The plain name ``x`` of ``x = Accelerator(..., kwargs_handlers=[kwargs_call])``."""
    cur: ast.AST | None = ctx.parents.get(kwargs_call)
    while isinstance(cur, (ast.List, ast.Tuple, ast.keyword)):
        cur = ctx.parents.get(cur)
    if not (isinstance(cur, ast.Call) and (dotted(cur.func) or "").split(".")[-1] == "Accelerator"):
        return None
    assign = ctx.parents.get(cur)
    if (
        isinstance(assign, ast.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0], ast.Name)
        and assign.value is cur
    ):
        return assign.targets[0].id
    return None


def frozen_names(nodes: Iterable[ast.AST], mode_switches: bool = True) -> dict[str, int]:
    """Models ``nodes`` freeze (``m.eval()``, ``m.requires_grad_(False)``, also ``self.m``) and never
    set back to training (``m.train()``, ``m.requires_grad_(True)``): dotted name → line of the first
    freeze. The one definition of a frozen model (also batchnorm-unsynced's frozen factory models).
    ``mode_switches=False``: ``eval()``/``train()`` do not count, only ``requires_grad_`` does (over a
    whole file, ``model.eval()`` is a validation pass, not a frozen model: timm's ``validate``)."""
    frozen: dict[str, int] = {}
    thawed: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, attr = dotted(node.func.value), node.func.attr
        if name is None:
            continue
        off = node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False
        if not mode_switches and attr != "requires_grad_":
            continue
        if attr == "eval" or (attr == "requires_grad_" and off):
            frozen[name] = min(frozen.get(name, node.lineno), node.lineno)
        elif attr == "train" or attr == "requires_grad_":
            thawed.add(name)
    return {n: line for n, line in frozen.items() if n not in thawed}


def parameters_frozen(ctx: FileContext, scope: ast.AST) -> set[str]:
    """Models whose every parameter ``scope`` sets not to require gradients and never sets back:
    ``m.requires_grad_(False)``, or a loop over ``m.parameters()`` whose body does
    ``p.requires_grad_(False)`` / ``p.requires_grad = False`` (an EMA copy frozen right after its
    DDP wrap). A model with such parameters builds no autograd graph, so DDP has none to traverse.
    Thawing the model or any part of it (``m.head.requires_grad_(True)``, a loop setting ``True``)
    drops it."""
    frozen: set[str] = set()
    thawed: set[str] = set()
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "requires_grad_"
        ):
            name = dotted(node.func.value)
            off = bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value is False
            if name is not None:
                (frozen if off else thawed).add(name)
        elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            it = node.iter
            if not (
                isinstance(it, ast.Call)
                and isinstance(it.func, ast.Attribute)
                and it.func.attr == "parameters"
                and (model := dotted(it.func.value)) is not None
            ):
                continue
            setting = _requires_grad_set(node.body, node.target.id)
            if setting is False:
                frozen.add(model)
            elif setting is True:
                thawed.add(model)
    return {m for m in frozen if not any(t == m or t.startswith(f"{m}.") for t in thawed)}


def _requires_grad_set(body: list[ast.stmt], param: str) -> bool | None:
    """What a loop body sets ``param``'s ``requires_grad`` to, unconditionally (a top-level statement
    of the body): False, True, or None (not set, set to something else, or only under a condition)."""
    for stmt in body:
        value: ast.expr | None = None
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute)
            and stmt.value.func.attr == "requires_grad_"
            and dotted(stmt.value.func.value) == param
        ):
            value = stmt.value.args[0] if stmt.value.args else ast.Constant(True)
        elif (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(t := stmt.targets[0], ast.Attribute)
            and t.attr == "requires_grad"
            and dotted(t.value) == param
        ):
            value = stmt.value
        if value is not None:
            return value.value if isinstance(value, ast.Constant) and isinstance(value.value, bool) else None
    return None
