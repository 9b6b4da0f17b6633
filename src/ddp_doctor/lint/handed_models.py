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

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.module_moves import unmoved

TORCH_BATCHNORM = "<torch BatchNorm>"  # a builder outside the project known to build BatchNorm
# callee -> argument (position, or keyword name) -> {(builder qualname, "file.py:line" of the call)}
Handed = dict[str, dict[int | str, set[tuple[str, str]]]]
MAX_HOPS = 4


def record(
    ctx: FileContext,
    target: Callable[[ast.AST], str | None],
    torch_batchnorm: Callable[[str], bool],
    into: Handed,
) -> None:
    """Add this file's calls of project code (``target`` resolves a callee) to ``into``."""
    for call in ctx.of_type(ast.Call):
        if not call.args and not call.keywords:
            continue
        key = target(call.func)
        if key is None:
            continue
        handed: list[tuple[int | str, ast.expr]] = [*enumerate(call.args)]
        handed += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        where = f"{Path(ctx.path).name}:{call.lineno}"
        for arg, expr in handed:
            for builder in _builders(ctx, target, torch_batchnorm, expr, call):
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
    wanted = canonical(qualname)
    if wanted is None:
        return None
    for key, per_arg in handed.items():
        if canonical(key) is not wanted:
            continue
        for arg in (position, name):
            for builder, where in sorted(per_arg.get(arg, ())):
                if builder == TORCH_BATCHNORM or builds_batchnorm(builder):
                    return where
    return None


def _builders(
    ctx: FileContext,
    target: Callable[[ast.AST], str | None],
    torch_batchnorm: Callable[[str], bool],
    expr: ast.AST,
    at: ast.AST,
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
        binding = _latest_assign(ctx, expr.id, at)
        if binding is None:
            # a project def or class handed by name (``DDPTrainer(model_fn=create_model)``): what
            # calling it builds
            built = target(expr)
            return {built} if built else set()
        value = unmoved(ctx, binding.value)
        if isinstance(value, ast.Name) and value.id == expr.id:
            at = binding  # ``model = model.cuda()``: what it held before
            continue
        expr, at = value, binding
    return set()


def _latest_assign(ctx: FileContext, name: str, at: ast.AST) -> ast.Assign | None:
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
