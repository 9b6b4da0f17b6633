"""Models handed to a function that wraps them in DDP (project mode): what its callers built.

TransReID builds its ResNet / BNNeck model in ``train.py`` (``model = make_model(cfg, ...)``) and
hands it to ``do_train(cfg, model, ...)`` in ``processor/processor.py``, which wraps its ``model``
parameter in DistributedDataParallel and trains it. The wrapping file builds nothing and the
building file wraps nothing, so batchnorm-unsynced needs what the call sites hand that parameter.
``record`` keeps, for every call of project code, the builders of the values handed to each
argument (a call's own target, or the latest binding of a name before the call, through moves
such as ``m = m.to(device)``; a SyncBatchNorm conversion hands nothing unsynced), and
``handed_builder`` answers for one parameter of one def once the index is complete.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from ddp_doctor.lint.context import FileContext, positional_params
from ddp_doctor.lint.module_moves import unmoved

TORCH_BATCHNORM = "<torch BatchNorm>"  # a builder outside the project known to build BatchNorm
# callee -> argument (position, or keyword name) -> {(builder qualname, "file.py:line" of the call)}
Handed = dict[str, dict[int | str, set[tuple[str, str]]]]
MAX_HOPS = 4
# a builder that is a parameter of the calling def, handed on: ``PARAMETER + "m.f" + SEP + "1" + SEP + "model"``
PARAMETER, SEP = "<param>", "#"


def record(
    ctx: FileContext,
    target: Callable[[ast.AST], str | None],
    torch_batchnorm: Callable[[str], bool],
    into: Handed,
    module: str,
    stars: tuple[str, ...] = (),
) -> None:
    """Add this file's calls of project code (``target`` resolves a callee) to ``into``; ``module``
    is this file's module (its defs' qualnames, for a parameter handed on), ``stars`` the project
    modules it star-imports (a plain name no import binds may be one of theirs: UFDN-Reid's ``from
    train import *`` then ``do_train_config(cfg, model, ...)``; a wrong guess names no def)."""
    for call in ctx.of_type(ast.Call):
        if not call.args and not call.keywords:
            continue
        key = target(call.func) or _base_constructor(ctx, target, call)
        keys = [key] if key else [f"{m}.{call.func.id}" for m in stars if isinstance(call.func, ast.Name)]
        for key in keys:
            _record_call(ctx, target, torch_batchnorm, into, module, key, call)


def _base_constructor(
    ctx: FileContext, target: Callable[[ast.AST], str | None], call: ast.Call
) -> str | None:
    """``super().__init__(config, model, criterion)`` (also ``super(Trainer, self).__init__``) in a
    method of a module-level class: the constructor of its first base when that is a project class
    (DBNet's ``Trainer(BaseTrainer)`` hands its ``model`` on to the base that wraps it)."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    ):
        return None
    fn = ctx.enclosing_function(call)
    owner = ctx.method_owner(fn) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if owner is None or not owner.bases or ctx.parents.get(owner) is not ctx.tree:
        return None
    return target(owner.bases[0])


def _record_call(
    ctx: FileContext,
    target: Callable[[ast.AST], str | None],
    torch_batchnorm: Callable[[str], bool],
    into: Handed,
    module: str,
    key: str,
    call: ast.Call,
) -> None:
    """Record what ``call`` of project def ``key`` hands each argument."""
    handed: list[tuple[int | str, ast.expr]] = [*enumerate(call.args)]
    handed += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    where = f"{Path(ctx.path).name}:{call.lineno}"
    for arg, expr in handed:
        for builder in _builders(ctx, target, torch_batchnorm, expr, call, module):
            into.setdefault(key, {}).setdefault(arg, set()).add((builder, where))


def handed_builder(
    handed: Handed,
    canonical: Callable[[str], object],
    qualname: str,
    position: int,
    name: str,
    builds_batchnorm: Callable[[str], bool],
) -> str | None:
    """Where (``"train.py:76"``) some caller hands parameter ``position`` / ``name`` of ``qualname``
    a model built with BatchNorm; None when no call site does. ``canonical`` maps a qualname to its
    definition (re-exports and aliases name the same def)."""
    return _handed(handed, canonical, qualname, position, name, builds_batchnorm, MAX_HOPS)


def _handed(
    handed: Handed,
    canonical: Callable[[str], object],
    qualname: str,
    position: int,
    name: str,
    builds_batchnorm: Callable[[str], bool],
    hops: int,
) -> str | None:
    wanted = canonical(qualname)
    if wanted is None or hops <= 0:
        return None
    for key, per_arg in handed.items():
        if canonical(key) is not wanted:
            continue
        for arg in (position, name):
            for builder, where in sorted(per_arg.get(arg, ())):
                if builder == TORCH_BATCHNORM or builds_batchnorm(builder):
                    return where
                if builder.startswith(PARAMETER):  # a parameter of the caller, handed on
                    outer, at, param = builder[len(PARAMETER) :].split(SEP)
                    found = _handed(handed, canonical, outer, int(at), param, builds_batchnorm, hops - 1)
                    if found is not None:
                        return found
    return None


def _builders(
    ctx: FileContext,
    target: Callable[[ast.AST], str | None],
    torch_batchnorm: Callable[[str], bool],
    expr: ast.AST,
    at: ast.AST,
    module: str,
) -> set[str]:
    expr = unmoved(ctx, expr)
    for _ in range(MAX_HOPS):
        if isinstance(expr, ast.Call):
            qual = ctx.call_qualname(expr) or ""
            if "SyncBatchNorm" in qual or (ctx.segment(expr.func)).endswith("convert_sync_batchnorm"):
                return set()  # converted before it is handed
            if torch_batchnorm(qual):
                return {TORCH_BATCHNORM}
            built = target(expr.func)
            return {built} if built else set()
        if not isinstance(expr, ast.Name):
            return set()
        binding = latest_assign(ctx, expr.id, at)
        if binding is None:
            # a project def or class handed by name (``DDPTrainer(model_fn=create_model)``): what
            # calling it builds
            built = target(expr)
            if built:
                return {built}
            # the caller's own parameter handed on (UFDN-Reid's ``do_train_config(cfg, model, ...)``
            # calling ``do_train_pd(cfg, model, ...)``): what the caller's callers hand it
            handed_on = _parameter(ctx, module, expr.id, at)
            return {handed_on} if handed_on else set()
        value = unmoved(ctx, binding.value)
        if isinstance(value, ast.Name) and value.id == expr.id:
            at = binding  # ``model = model.cuda()``: what it held before
            continue
        expr, at = value, binding
    return set()


def _parameter(ctx: FileContext, module: str, name: str, at: ast.AST) -> str | None:
    """``name`` as a parameter of the def around ``at`` (a module-level function, or a method of a
    module-level class, ``__init__`` standing for its class), spelled for ``handed_builder``."""
    fn = ctx.enclosing_function(at)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    owner = ctx.method_owner(fn)
    params = positional_params(fn, bound=owner is not None)
    if name not in params and name not in [a.arg for a in fn.args.kwonlyargs]:
        return None
    if owner is not None and ctx.parents.get(owner) is ctx.tree:
        qual = f"{module}.{owner.name}" + ("" if fn.name == "__init__" else f".{fn.name}")
    elif owner is None and ctx.parents.get(fn) is ctx.tree:
        qual = f"{module}.{fn.name}"
    else:
        return None
    position = params.index(name) if name in params else -1
    return f"{PARAMETER}{qual}{SEP}{position}{SEP}{name}"


def latest_assign(ctx: FileContext, name: str, at: ast.AST) -> ast.Assign | None:
    """The last plain assignment of ``name`` before ``at`` in its function (source order)."""
    line = getattr(at, "lineno", 0)
    binds = [
        b
        for b in ctx.bindings(ctx.enclosing_function(at)).get(name, [])
        if isinstance(b, ast.Assign)
        and b.lineno < line
        and len(b.targets) == 1
        and isinstance(b.targets[0], ast.Name)
    ]
    return binds[-1] if binds else None
