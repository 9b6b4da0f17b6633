"""accum-loss-unscaled: inside an accumulation loop, backward runs on an undivided loss.

Gradients of A micro-steps add up, so the loss must be divided by A (or the whole step's loss
normalised by its global token count) for the update to equal one large-batch step (torch
docs, "gradient accumulation"; torchtitan normalises by the global valid-token count). Flagged
only when the backward root provably comes from a loss function or a model forward with no
division on the way (``ddp_doctor.lint.rules._loss``); division anywhere — in a helper, by a
token count, by ``num_items_in_batch`` — or gradient scaling (``p.grad.div_``) is accepted, and
accelerate's ``accelerator.backward`` divides by the Accelerator's own accumulation count (when the
file's ``Accelerator()`` has none, that count is 1 and a hand-made micro-step loop is unscaled). A
call of a helper (same file or, in project mode, another file) that backprops the argument it is
handed as it is (``loops.backprops_param_itself``) is a backward of that argument.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, keyword, method, next_in_block
from ddp_doctor.lint.loops import (
    Backward,
    LoopFacts,
    accelerator_accumulates,
    accumulation_window,
    backprops_param_itself,
    backward_of,
)
from ddp_doctor.lint.rules._loss import LossTracer
from ddp_doctor.lint.rules.base import Rule, Violation


class AccumLossUnscaled(Rule):
    id = "accum-loss-unscaled"
    project_facts = frozenset({"call_arguments"})
    flagged = (
        "inside an accumulation loop, backward on a value that provably comes from a loss function / "
        "model forward with no division (also through apex `amp.scale_loss(loss, ...) as scaled_loss`, "
        "and weighted by a data size: `loss.mean() * targets.size(1)`, or by the world size: "
        "`loss * WORLD_SIZE`, or by a weight through `torch.mul(loss, w)`; the logistic GAN loss written out "
        "over a forward's logits, `F.softplus(-d_fake).mean()`; a model's own `model.train_step(batch)` "
        "result; also `accelerator.backward(loss)` of an `Accelerator()` built without "
        "`gradient_accumulation_steps` around a hand-made micro-step loop, where accelerate divides by 1; "
        "Lightning Fabric's `fabric.backward(loss)`, which never divides; and a loss divided only by "
        'its own micro-batch\'s size, `total / sample["sample_size"]` in the loop over the micro-batches: '
        "a per-micro-batch mean; a loss handed to a helper that backprops it as it is, "
        "`manager.backward_loss(loss, model, optimizer)` running `loss.backward()` or apex `scale_loss`)"
    )
    not_flagged = (
        "`loss / accum` anywhere on the way (also inside a helper), normalisation by a global token "
        "count, HF `num_items_in_batch`, `p.grad.div_(n)`, fairseq's `optimizer.multiply_grads(...)`, a loss "
        "whose reduction configuration picks (`policy_loss(logp, adv, cfg.loss_reduction)`), "
        "`accelerator.backward` of an Accelerator built "
        "with an accumulation count (configured, or a literal above 1); a backward "
        "followed on its path by an unconditional step (the `else` of `if accum > 1:`) or by a "
        "`zero_grad` that discards it (a statistics probe); (project) a count parameter that defaults "
        "to 1 and that no call passes; a helper that divides what it is handed before its backward; a loss "
        "callee handed the accumulation count or a divisor (`extract_loss(report, loss_divisor)`)"
    )
    required = (("backward",),)
    # (project) a backward run by a project helper of another file that backprops what it is handed
    required_in_project = required

    def project_words(self, project: Any) -> tuple[str, ...]:
        return project.backprop_itself_names()  # type: ignore[no-any-return]  # ProjectIndex

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        tracer = LossTracer(ctx)
        for loop in accumulation_window(facts):
            if _scales_gradients(ctx, ctx.enclosing_function(loop.loop)):
                continue
            reported: set[str] = set()
            for node in facts.nodes(loop.loop.body):
                bw = backward_of(node) or _helper_backward(ctx, facts, node)
                if bw is None or (
                    bw.framework
                    and not _plain_accelerator_backward(ctx, bw.call)
                    and not _fabric_backward(bw.call)
                ):
                    continue
                if tracer.state(bw.root, bw.call) != "raw":
                    continue
                if _not_accumulated(ctx, facts, bw.call, loop.loop):
                    continue
                root = ctx.segment(bw.root) if bw.root is not None else "loss"
                if root in reported:
                    # the same value backpropagated again in this loop (ai4code's adversarial pass
                    # recomputes `loss` and backprops it every `stride` steps): one fix, one finding
                    continue
                reported.add(root)
                yield self.violation(
                    bw.call,
                    Text(
                        f"`{root}` reaches backward undivided inside "
                        f"{loop.where_en}: the gradient is the sum over micro-steps, not their mean.",
                        f"`{root}` 在{loop.where_zh}中未经除法就传给了 backward：梯度是各微步之和而不是平均。",
                    ),
                    accumulation_loop_line=loop.loop.lineno,
                )


def _helper_backward(ctx: FileContext, facts: LoopFacts, node: ast.AST) -> Backward | None:
    """A call of a helper that backprops the argument it is handed, undivided (a distributed
    manager's ``manager.backward_loss(loss, model, optimizer)``: ``loss.backward()``, or apex
    ``scale_loss`` under fp16; ``loops.backprops_param_itself``): a backward of that argument. A helper
    that computes or divides on the way is followed by the tracer through its own backward, not here."""
    if not isinstance(node, ast.Call):
        return None
    fn = ctx.helper(node)
    if fn is not None:
        itself = backprops_param_itself(fn, ctx.local(fn))
    else:
        itself = ctx.project is not None and ctx.project.call_backprops_itself(ctx, node)
    return facts.backward(node) if itself else None


LOOP_OR_DEF = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _not_accumulated(ctx: FileContext, facts: LoopFacts, call: ast.Call, loop: ast.AST) -> bool:
    """What runs after this backward settles the gradient before another micro-step adds to it: an
    unconditional optimizer step on its path to the end of the loop body (the ``else`` of ``if
    accumulation_steps > 1:``, Swin/MiniViT: one backward per step, nothing to divide), or a
    ``zero_grad`` as the very next statement (lingua's probe: a backward on half a batch to collect
    statistics, discarded at once). A ``zero_grad`` later in the micro-step is not read as a
    discard: that is zero-grad-inside-accum's bug, and the loss should still be divided."""
    following = _next_statement(ctx, ctx.parents.get(call))
    if following is not None and any(
        (m := method(n)) and m[1] == "zero_grad" for n in _unconditional(following)
    ):
        return True
    child: ast.AST = call
    cur = ctx.parents.get(call)
    # up to the innermost loop: past it, a step after a micro-batch loop is the nested shape itself
    while cur is not None and cur is not loop and not isinstance(cur, LOOP_OR_DEF):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(cur, field, None)
            if isinstance(block, list) and child in block:
                for stmt in block[block.index(child) + 1 :]:
                    if any(facts.is_optimizer_step(n) for n in _unconditional(stmt)):
                        return True
        child, cur = cur, ctx.parents.get(cur)
    return False


def _next_statement(ctx: FileContext, statement: ast.AST | None) -> ast.stmt | None:
    """The statement that runs right after ``statement`` (an expression statement), also when it
    ends an ``if``/``with`` block (``if m: (a + b).backward() else: a.backward()`` then the next)."""
    if not isinstance(statement, ast.Expr):
        return None
    cur: ast.AST = statement
    while True:
        holder = ctx.parents.get(cur)
        if holder is None or isinstance(holder, LOOP_OR_DEF):
            return None
        following = next_in_block(ctx, cur)
        if following is not None:
            return following
        if not isinstance(holder, (ast.If, ast.With, ast.AsyncWith, ast.Try)):
            return None
        cur = holder


def _unconditional(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The calls a statement always makes: its own expression, and the bodies of ``with`` blocks."""
    if isinstance(stmt, ast.Expr):
        yield stmt.value
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for inner in stmt.body:
            yield from _unconditional(inner)


def _plain_accelerator_backward(ctx: FileContext, call: ast.Call) -> bool:
    """``accelerator.backward(loss)`` where every ``Accelerator(...)`` of the file is built without an
    accumulation count (or with a literal 1): accelerate divides the loss by its own
    ``gradient_accumulation_steps`` only, which is then 1, so a micro-step loop written by hand around
    it (``if (step + 1) % args.accum_steps == 0: optimizer.step()``) sums undivided losses. A count
    from configuration, a plugin, ``**kwargs`` or an Accelerator built in another file may divide:
    not this case (``accelerator_accumulates``)."""
    receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    if receiver is None or not receiver.split(".")[-1].lower().endswith("accelerator"):
        return False
    accumulates, _ = accelerator_accumulates(ctx)
    if accumulates:
        return False
    # DeepSpeed under accelerate scales by the accumulation count of its own config
    return not any(
        keyword(c, "deepspeed_plugin") is not None
        for c in ctx.of_type(ast.Call)
        if isinstance(c, ast.Call) and ctx.call_qualname(c) == "accelerate.Accelerator"
    )


def _fabric_backward(call: ast.Call) -> bool:
    """``fabric.backward(loss)`` (Lightning Fabric): Fabric leaves accumulation to the loop ("works
    the same way with Fabric as in PyTorch", its gradient-accumulation guide) and never divides the
    loss by a count, so an undivided loss in a hand-made micro-step loop is summed (OpenThaiGPT)."""
    receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    return receiver is not None and receiver.split(".")[-1].lower().endswith("fabric")


def _scales_gradients(ctx: FileContext, scope: ast.AST) -> bool:
    """The function divides or multiplies ``.grad`` itself (``p.grad.div_(n)``, ``p.grad /= n``), or
    through fairseq's optimizer API (``optimizer.multiply_grads(1 / sample_size)``, which fairseq-style
    trainers call after summing per-micro-batch losses)."""
    for node in ctx.local(scope):
        m = method(node)
        if m and m[1] in ("div_", "mul_") and (m[0] or "").endswith((".grad", ".grad.data")):
            return True
        if m and m[1] == "multiply_grads":
            return True
        if isinstance(node, ast.AugAssign) and (dotted(node.target) or "").endswith(".grad"):
            return True
    return False
