"""no-sync-after-forward: gradient sync toggled between the forward and the backward.

DDP decides in its forward whether the coming backward will all-reduce: ``_pre_forward`` /
``_post_forward`` read ``require_backward_grad_sync`` and call ``reducer.prepare_for_backward``
only when it is True (torch/nn/parallel/distributed.py). Setting the flag, or entering
``no_sync()``, after ``model(...)`` but before ``backward`` therefore does not affect that
micro-step. Flagged in one block: a forward of ``M``, then the toggle of ``M``, then a backward
with no new forward of ``M`` in between. nanoGPT's ``model.require_backward_grad_sync = ...``
before the forward is the correct idiom and is not flagged. Neither is a second, redundant
``no_sync()`` around the backward when the forward already ran inside ``M.no_sync()``: the sync
was off when DDP decided, so it is not late.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TypeGuard

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, method
from ddp_doctor.lint.loops import LoopFacts, backward_of
from ddp_doctor.lint.rules.base import Rule, Violation

TOGGLE_ATTR = "require_backward_grad_sync"


class NoSyncAfterForward(Rule):
    id = "no-sync-after-forward"
    flagged = (
        "in one block: forward of `M`, then `M.require_backward_grad_sync = ...` or `with "
        "M.no_sync():` (also under an `if`), then backward with no new forward of `M`; also accelerate's "
        "`with accelerator.accumulate(M):` / `accelerator.no_sync(M)` and Fabric's `fabric.no_backward_sync(M)` "
        "entered after `M`'s forward"
    )
    not_flagged = (
        "the flag set before the forward (nanoGPT), `no_sync` around forward and backward, a forward "
        "already inside `M.no_sync()` with a second, redundant `no_sync()` around backward, unrolled "
        "micro-steps with a fresh forward, a forward on the other branch of the same test as the toggle "
        "(`if step % k == 0: model(x) else: with model.no_sync(): model(x)`, then the same test around backward)"
    )
    required = ((TOGGLE_ATTR, "no_sync", "accumulate", "no_backward_sync"),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        for node in ctx.nodes:
            for field_name in ("body", "orelse", "finalbody"):
                block = getattr(node, field_name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    yield from self._block(ctx, block)

    def _block(self, ctx: FileContext, block: list[ast.stmt]) -> Iterator[Violation]:
        for i, outer in enumerate(block):
            for stmt in _guarded(outer):
                yield from self._toggle(ctx, block, i, stmt)

    def _toggle(self, ctx: FileContext, block: list[ast.stmt], i: int, stmt: ast.stmt) -> Iterator[Violation]:
        """``stmt`` is ``block[i]`` or a toggle under an ``if`` at ``block[i]``."""
        toggled = _toggled_model(ctx, stmt)
        if toggled is None:
            return
        path = _branches(ctx, stmt, block[i])
        names = _forward_names(ctx, stmt, toggled)
        forward = _first(
            n
            for s in block[:i]
            for n in ctx.local(s)
            if _is_forward(n, ctx, names) and not _exclusive(path, _branches(ctx, n, s))
        )
        if forward is None or _inside_toggle(ctx, forward, toggled):
            return
        after = [stmt.body] if isinstance(stmt, (ast.With, ast.AsyncWith)) else [block[i + 1 :]]
        for stmts in after:
            nodes = sorted(
                (n for s in stmts for n in ctx.local(s) if isinstance(n, ast.Call)),
                key=lambda n: (n.lineno, n.col_offset),
            )
            for n in nodes:
                if _is_forward(n, ctx, names):
                    break  # a fresh forward after the toggle: the toggle applies to it
                if backward_of(n):
                    yield self.violation(
                        stmt,
                        Text(
                            f"Gradient sync of `{toggled}` is toggled at line {stmt.lineno}, after its forward "
                            f"at line {forward.lineno}: DDP already decided during that forward, so the backward at "
                            f"line {n.lineno} ignores it.",
                            f"`{toggled}` 的梯度同步在第 {stmt.lineno} 行才切换，晚于第 {forward.lineno} 行的前向："
                            f"第 {n.lineno} 行的 backward 不受其影响。",
                        ),
                        forward_line=forward.lineno,
                        toggle_line=stmt.lineno,
                        backward_line=n.lineno,
                    )
                    break


def _inside_toggle(ctx: FileContext, node: ast.AST, model: str) -> bool:
    """``node`` runs inside ``with model.no_sync():`` (in its function)."""
    cur = ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, (ast.With, ast.AsyncWith)) and _toggled_model(ctx, cur) == model:
            return True
        cur = ctx.parents.get(cur)
    return False


def _guarded(stmt: ast.stmt) -> Iterator[ast.stmt]:
    """``stmt`` itself, and statements under (nested) ``if`` branches of it: a toggle under
    ``if ddp:`` still comes after a forward that precedes the ``if``."""
    yield stmt
    if isinstance(stmt, ast.If):
        for s in (*stmt.body, *stmt.orelse):
            yield from _guarded(s)


def _branches(ctx: FileContext, node: ast.AST, top: ast.stmt) -> dict[str, str]:
    """The branches of the ``if`` statements from ``top`` down to ``node``: the test's source (its
    AST dump) → ``"body"`` or ``"orelse"``."""
    out: dict[str, str] = {}
    child, cur = node, ctx.parents.get(node)
    while cur is not None and child is not top:
        if isinstance(cur, ast.If) and child is not cur.test:
            out[ast.dump(cur.test)] = "body" if child in cur.body else "orelse"
        child, cur = cur, ctx.parents.get(cur)
    return out


def _exclusive(toggle: dict[str, str], forward: dict[str, str]) -> bool:
    """The forward and the toggle sit in opposite branches of one test written twice (``if step %
    accum == 0: out = model(x) else: with model.no_sync(): out = model(x)``, then the same ``if``
    around the backward): on the toggle's path that forward never ran, the other branch's did."""
    return any(toggle.get(test, side) != side for test, side in forward.items())


def _first(it: Iterator[ast.Call]) -> ast.Call | None:
    return next(it, None)


def _forward_names(ctx: FileContext, at: ast.AST, model: str) -> frozenset[str]:
    """``model`` and the names its function binds to ``torch.compile(model)``: the compiled
    wrapper runs the same DDP module's forward (LLM_Train: ``optimized_model =
    torch.compile(transformer_model)`` ... ``transformer_model.no_sync()``)."""
    names = {model}
    for n in ctx.local(ctx.enclosing_function(at)):
        if (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and ctx.call_qualname(n.value) == "torch.compile"
            and n.value.args
            and dotted(n.value.args[0]) == model
        ):
            names.update(d for t in n.targets if (d := dotted(t)))
    return frozenset(names)


def _is_forward(node: ast.AST, ctx: FileContext, names: frozenset[str]) -> TypeGuard[ast.Call]:
    """A call of the model (or its ``forward``), or of a same-file helper handed the model that
    calls it (``loss = train_step(model, batch)`` with ``def train_step(m, b): out = m(b.x)``)."""
    if not isinstance(node, ast.Call):
        return False
    name = dotted(node.func)
    if name in names or (name or "").removesuffix(".forward") in names:
        return True
    helper = ctx.helper(node)
    if helper is None:
        return False
    params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
    if params and params[0] in ("self", "cls") and isinstance(node.func, ast.Attribute):
        params = params[1:]
    handed = {params[k] for k, a in enumerate(node.args) if k < len(params) and dotted(a) in names}
    handed |= {k.arg for k in node.keywords if k.arg and dotted(k.value) in names}
    return bool(handed) and any(
        isinstance(n, ast.Call) and dotted(n.func) in handed for n in ctx.local(helper)
    )


def _toggled_model(ctx: FileContext, stmt: ast.stmt) -> str | None:
    """``M`` when ``stmt`` is ``M.require_backward_grad_sync = ...`` or ``with M.no_sync():``."""
    if isinstance(stmt, ast.Assign):
        for t in stmt.targets:
            if isinstance(t, ast.Attribute) and t.attr == TOGGLE_ATTR:
                return dotted(t.value)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            expr = item.context_expr
            if isinstance(expr, ast.Name):  # `ctx = model.no_sync() if ... else nullcontext()`
                scope = ctx.enclosing_function(stmt)
                values = [
                    n.value
                    for n in ctx.local(scope)
                    if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)
                ]
                expr = values[-1] if len(values) == 1 else expr
            for n in ast.walk(expr):
                m = method(n)
                if m and m[1] == "no_sync" and m[0] and not _wrapper_object(m[0]):
                    return m[0]
                if (
                    isinstance(n, ast.Call)
                    and m
                    and m[1] in WRAPPER_TOGGLES
                    and m[0]
                    and _wrapper_object(m[0])
                ):
                    return dotted(n.args[0]) if n.args else None
    return None


# The sync toggles of accelerate and Lightning Fabric take the model they switch: ``with
# accelerator.accumulate(model):`` enters ``model.no_sync()`` on the micro-steps that do not sync, as
# ``accelerator.no_sync(model)`` and ``fabric.no_backward_sync(model)`` do. A forward of ``model`` before
# the block (iVideoGPT: the generator's forward, then ``with accelerator.accumulate(model):`` around the
# loss and ``accelerator.backward``) was decided with the sync on.
WRAPPER_TOGGLES = frozenset({"accumulate", "no_sync", "no_backward_sync"})


def _wrapper_object(receiver: str) -> bool:
    return receiver.split(".")[-1].lower().endswith(("accelerator", "fabric"))
