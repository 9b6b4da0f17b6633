"""clip-before-unscale: gradients clipped while still multiplied by the GradScaler's scale.

After ``scaler.scale(loss).backward()`` the gradients are scaled by ~2**16; clipping them before
``scaler.unscale_(optimizer)`` clips at a threshold that many times too small (torch docs,
"Automatic Mixed Precision examples — gradient clipping": unscale_ first). Events are taken in
source order within one function, following same-file helpers: a clip after a scaled backward
with no ``unscale_`` of that scaler in between is flagged. A same-file helper named for clipping that
scales or clamps ``.grad`` in place is a clip too (MedSora's copy of ``clip_grad_norm_``). accelerate's ``clip_grad_norm_``
unscales by itself and is not matched. apex: ``with amp.scale_loss(loss, optimizer) as
scaled_loss: scaled_loss.backward()`` leaves the gradients scaled until the block exits (apex
unscales them into the master gradients on ``__exit__``), so a clip inside that block, after the
backward, clips scaled (or, under O2, not yet copied) gradients. Autofix: insert ``scaler.unscale_(optimizer)`` above the
clip, when the later ``scaler.step(optimizer)`` names the optimizer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, method, walk_local
from ddp_doctor.lint.flags import gate_of
from ddp_doctor.lint.loops import HELPER_DEPTH, LoopFacts, scale_call
from ddp_doctor.lint.rules.base import (
    Edit,
    Rule,
    Violation,
    insert_line_before,
    starts_own_line,
    statement_of,
)

CLIPS = (
    "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grads_with_norm_",
)
APEX_SCALE_LOSS = "apex.amp.scale_loss"
# In-place tensor methods a hand-written clip ends in (``g.mul_(clip_coef)``, ``p.grad.clamp_(-c, c)``).
HAND_CLIPS = frozenset({"mul_", "clamp_", "clip_", "div_", "_foreach_mul_"})


class ClipBeforeUnscale(Rule):
    id = "clip-before-unscale"
    flagged = (
        "in source order within a function (following same-file helpers): "
        "`scaler.scale(x).backward()`, then `torch.nn.utils.clip_grad_norm_/clip_grad_value_` (or a same-file "
        "clip written by hand: a `*clip*` def doing `g.mul_(coef)` / `p.grad.clamp_(-c, c)`) with no"
        ' `scaler.unscale_` in between; `accelerator.backward(loss)` of an `Accelerator(mixed_precision="fp16")` '
        "(also one branch of an `if`) then the torch clip, with no `unscale_gradients()`; a torch clip "
        "inside apex's `with amp.scale_loss(loss, optimizer) as scaled: scaled.backward()` block"
    )
    not_flagged = (
        "`unscale_` before the clip (also under `if grad_clip:`), no scaler, `accelerator.clip_grad_norm_`, "
        "a clip after the `amp.scale_loss` block"
    )
    autofix = (
        "inserts `scaler.unscale_(optimizer)` above the clip (when backward, clip and "
        "`scaler.step(optimizer)` are in one function)"
    )
    # ``grad``: a hand-written clip reads ``p.grad`` (``_clips_by_hand``)
    required = (("scale", "mixed_precision", "scale_loss"), (*(c.split(".")[-1] for c in CLIPS), "grad"))

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        yield from self._apex(ctx)
        for scope in ctx.scopes():
            events = list(_events(ctx, scope, HELPER_DEPTH, frozenset()))
            scaled_by: str | None = None  # the scaler of the last scaled backward not yet unscaled
            backward: ast.Call | None = None
            for i, (kind, scaler, node) in enumerate(events):
                if kind == "backward":
                    scaled_by, backward = scaler, node
                elif kind == "unscale" and scaler == scaled_by:
                    scaled_by = None
                elif kind == "clip" and scaled_by is not None:
                    if backward is not None and _exclusive(ctx, backward, node):
                        continue  # `if amp: scaled backward ... else: backward; clip`
                    step = next((n for k, s, n in events[i:] if k == "step" and s == scaled_by), None)
                    gated_by = gate_of(ctx, backward) if backward is not None else None
                    precision = _fp16_accelerator(ctx, scaled_by)
                    unscale = f"{scaled_by}.unscale_(optimizer)"
                    if precision is not None:  # accelerate's GradScaler: its own unscale call
                        unscale = f"{scaled_by}.unscale_gradients()"
                        if not isinstance(precision, ast.Constant):
                            gated_by = gated_by or f'`{ctx.segment(precision)}` is "fp16"'

                    yield self.violation(
                        node,
                        Text(
                            f"`{ctx.segment(node.func)}` clips gradients still scaled by `{scaled_by}`: call "
                            f"`{unscale}` first.",
                            f"`{ctx.segment(node.func)}` 裁剪的梯度仍被 `{scaled_by}` 缩放：请先调用 `{unscale}`。",
                        ),
                        edits=() if gated_by else _fix(ctx, node, scaled_by, step, backward),
                        gated_by=gated_by,
                        scaler=scaled_by,
                    )

    def _apex(self, ctx: FileContext) -> Iterator[Violation]:
        """A clip inside ``with amp.scale_loss(...) as scaled: scaled.backward()``, after the backward:
        apex unscales only when the block exits."""
        for block in ctx.of_type(ast.With):
            names = {
                dotted(item.optional_vars)
                for item in block.items
                if isinstance(item.context_expr, ast.Call)
                and ctx.call_qualname(item.context_expr) == APEX_SCALE_LOSS
                and item.optional_vars is not None
            } - {None}
            if not names:
                continue
            calls = sorted(
                (n for n in walk_local(_own_statements(block.body)) if isinstance(n, ast.Call)),
                key=lambda n: (n.lineno, n.col_offset),
            )
            backward: ast.Call | None = None
            for call in calls:
                m = method(call)
                if m and m[1] == "backward" and m[0] in names:
                    backward = backward or call
                elif backward is not None and ctx.call_qualname(call) in CLIPS:
                    yield self.violation(
                        call,
                        Text(
                            f"`{ctx.segment(call.func)}` runs inside `with amp.scale_loss(...)`, whose "
                            "gradients apex unscales only when the block exits: it clips scaled "
                            "gradients. Clip after the `with` block.",
                            f"`{ctx.segment(call.func)}` 位于 `with amp.scale_loss(...)` 内部，apex 只在该块退出时"
                            "反缩放梯度：它裁剪的是仍被缩放的梯度。请在 `with` 块之后裁剪。",
                        ),
                        gated_by=gate_of(ctx, block),
                        scaler="amp.scale_loss",
                    )


def _own_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` whose code runs there: not a def or class it only defines
    (``walk_local`` leaves nested bodies alone below its roots, not in them)."""
    return [s for s in body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _exclusive(ctx: FileContext, a: ast.AST, b: ast.AST) -> bool:
    """``a`` and ``b`` sit in different branches of one ``if``/``else`` (never both run)."""
    chain: dict[int, ast.AST] = {}
    child, cur = a, ctx.parents.get(a)
    while cur is not None:
        chain[id(cur)] = child
        child, cur = cur, ctx.parents.get(cur)
    child, cur = b, ctx.parents.get(b)
    while cur is not None:
        if id(cur) in chain and isinstance(cur, ast.If):
            a_side, b_side = chain[id(cur)], child
            return (a_side in cur.body) != (b_side in cur.body) and a_side is not cur.test
        if id(cur) in chain:
            return False
        child, cur = cur, ctx.parents.get(cur)
    return False


def _events(
    ctx: FileContext, scope: ast.AST, depth: int, seen: frozenset[int]
) -> Iterator[tuple[str, str | None, ast.Call]]:
    """(kind, scaler, call) in source order; helper bodies are spliced in at their call."""
    calls = sorted(
        (n for n in ctx.local(scope) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)
    )
    for call in calls:
        m = method(call)
        if m and m[1] == "backward" and isinstance(call.func, ast.Attribute):  # (m implies the Attribute)
            scaled = scale_call(call.func.value)
            scaler = (
                dotted(scaled.func.value)
                if scaled is not None and isinstance(scaled.func, ast.Attribute)
                else None
            )
            if scaler:
                yield "backward", scaler, call
            elif m[0] and call.args and _fp16_accelerator(ctx, m[0]) is not None:
                yield "backward", m[0], call  # ``accelerator.backward(loss)`` scales it when fp16
        elif m and m[1] in ("unscale_", "unscale_gradients") and m[0]:
            yield "unscale", m[0], call
        elif m and m[1] == "step" and m[0] and call.args:
            yield "step", m[0], call
        elif (
            ctx.call_qualname(call) in CLIPS
            or (fn := ctx.helper(call)) is not None
            and _clips_by_hand(ctx, fn)
        ):
            yield "clip", None, call
        elif depth and fn is not None and id(fn) not in seen:
            yield from _events(ctx, fn, depth - 1, seen | {id(fn)})


def _clips_by_hand(ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``fn`` is a hand-written clip: named for clipping, it reads ``.grad`` and scales or clamps in
    place (MedSora's same-file copy of ``torch.nn.utils.clip_grad_norm_`` ending in ``g.mul_(coef)``;
    the captioning tutorials' ``clip_gradient(optimizer, c)`` doing ``p.grad.data.clamp_(-c, c)``).
    A helper that calls torch's clip or unscales is followed instead: its own events say it."""
    if "clip" not in fn.name.lower():
        return False
    reads_grad = in_place = False
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr == "grad":
            reads_grad = True
        elif isinstance(n, ast.Call):
            m = method(n)
            if m and m[1] in ("unscale_", "unscale_gradients") or ctx.call_qualname(n) in CLIPS:
                return False
            if m and m[1] in HAND_CLIPS:
                in_place = True
    return reads_grad and in_place


def _fp16_accelerator(ctx: FileContext, receiver: str) -> ast.expr | None:
    """``receiver`` is bound in this file to ``Accelerator(mixed_precision=...)`` whose value can be
    ``"fp16"`` (a literal, or one branch of ``"fp16" if args.fp16 else None``). accelerate then keeps
    a GradScaler: ``accelerator.backward(loss)`` runs ``scaler.scale(loss).backward()`` and only the
    prepared optimizer's ``step`` (or ``accelerator.clip_grad_norm_`` / ``unscale_gradients``)
    unscales, so a plain ``torch.nn.utils.clip_grad_norm_`` in between sees scaled gradients. An
    Accelerator without the keyword takes its precision from the launch configuration: not known.
    Returns the keyword's value (the gate when it is not the literal)."""
    for node in ctx.of_type(ast.Assign):
        if not (
            isinstance(node.value, ast.Call)
            and (dotted(node.value.func) or "").rsplit(".", 1)[-1] == "Accelerator"
            and any(dotted(t) == receiver for t in node.targets)
        ):
            continue
        for k in node.value.keywords:
            if k.arg == "mixed_precision" and any(
                isinstance(n, ast.Constant) and n.value == "fp16" for n in ast.walk(k.value)
            ):
                return k.value
    return None


def _fix(
    ctx: FileContext, clip: ast.Call, scaler: str, step: ast.Call | None, backward: ast.Call | None
) -> tuple[Edit, ...]:
    """Only when backward, clip and step share one function: a helper may not see the names."""
    scope = ctx.enclosing_function(clip)
    if (
        step is None
        or backward is None
        or ctx.enclosing_function(step) is not scope
        or ctx.enclosing_function(backward) is not scope
    ):
        return ()
    stmt = statement_of(ctx, clip)
    optimizer = dotted(step.args[0]) if step is not None else None
    if optimizer is None or stmt is None or not starts_own_line(ctx, stmt):
        return ()
    return (insert_line_before(ctx, stmt, f"{scaler}.unscale_({optimizer})"),)
