"""zero-grad-inside-accum: ``zero_grad()`` runs on every micro-step of an accumulation loop.

Zeroing between micro-steps discards the gradients accumulated so far, so only the last
micro-batch contributes to the update (torch docs, "gradient accumulation": zero once per
optimizer step). Only unconditional calls in the micro-step scope are flagged
(``ddp_doctor.lint.loops``): ``if i % accum == 0: optimizer.zero_grad()`` is correct, and so is
one after an early exit (``if (i + 1) % accum != 0: continue``).

Inside ``with accelerator.accumulate(model):`` accelerate gates the *prepared optimizer's*
``zero_grad``: it runs only on the micro-step where ``sync_gradients`` is True, which accelerate
sets when the block is entered. Two spellings still wipe the accumulated gradients:

- ``optimizer.zero_grad()`` before the backward of the block (the known ordering bug): on the
  syncing micro-step it clears what the previous micro-steps accumulated, before the last
  micro-batch's backward, so the update sees one micro-batch (accelerate's docs call zero_grad
  after ``step``);
- ``optimizer.zero_grad()`` between two backwards of the block when the same optimizer steps after
  the second (S3Diff, img2img-turbo: ``backward(loss); optimizer.step(); optimizer.zero_grad()`` then
  ``backward(lossG); optimizer.step()``): on the syncing micro-step the second step sees one micro-batch;
- ``zero_grad()`` on anything accelerate does not gate (the prepared *model*, an optimizer that was
  not prepared): it runs on every micro-step.

With ``Accelerator(gradient_accumulation_steps=1)`` (the default) there is nothing to wipe: no
finding. A value from configuration makes the finding config-gated; an Accelerator built in
another file is taken to accumulate (the code asks for ``accumulate()``), also config-gated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, method
from ddp_doctor.lint.loops import (
    LoopFacts,
    accelerate_accumulate_blocks,
    accelerator_accumulates,
    accumulation_count,
    accumulation_window,
    count_gate,
    is_accum_guard,
    micro_method_calls,
    unconditional,
    unconditional_nodes,
)
from ddp_doctor.lint.rules.base import Rule, Violation


class ZeroGradInsideAccum(Rule):
    id = "zero-grad-inside-accum"
    project_facts = frozenset({"call_arguments"})
    flagged = (
        "`zero_grad()` runs unconditionally on every micro-step (directly or in a helper; the "
        "micro-batch loop may end its function with the step in the caller); inside "
        "`accelerator.accumulate()`: the prepared optimizer's `zero_grad` before the block's backward"
        " (on the syncing micro-step it clears what the previous ones accumulated), or between two backwards"
        " of the block before the same optimizer's second `step` (`backward(loss); opt.step(); opt.zero_grad();"
        " backward(lossG); opt.step()`), or `zero_grad` on"
        " what accelerate does not gate (the prepared model) — config-gated when "
        "`gradient_accumulation_steps` comes from configuration"
    )
    not_flagged = (
        "`zero_grad` after `step`, `if i % accum == 0: zero_grad()`, accelerate-prepared optimizers "
        "after backward, a generator's `zero_grad` before the discriminator's own backward and step, an "
        "optimizer handed in to a file that prepares nothing (its caller may have "
        "prepared it), `Accelerator()` without accumulation, a loop without accumulation"
    )
    required = (("zero_grad",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        for loop, node, receiver in micro_method_calls(facts, "zero_grad"):
            yield self.violation(
                node,
                Text(
                    f"`{receiver}.zero_grad()` runs on every micro-step of "
                    f"{loop.where_en} (the optimizer steps at line {loop.step_line}): only the last "
                    "micro-batch's gradient survives.",
                    f"`{receiver}.zero_grad()` 在{loop.where_zh}的每个微步都会执行（优化器在第 "
                    f"{loop.step_line} 行更新）：只有最后一个微批次的梯度被保留。",
                ),
                accumulation_loop_line=loop.loop.lineno,
                optimizer_step_line=loop.step_line,
            )
        yield from self._guard_before_backward(ctx, facts)
        blocks = accelerate_accumulate_blocks(facts)
        if not blocks:
            return
        accumulates, gate = accelerator_accumulates(ctx)
        if not accumulates:
            return
        for block in blocks:
            nodes = list(unconditional_nodes(facts, block.body))
            backwards = [bw.call.lineno for n in nodes if (bw := facts.backward(n))]
            first_backward = backwards[0] if backwards else None
            for call in nodes:
                m = method(call)
                if not m or m[1] != "zero_grad" or not isinstance(call, ast.Call):
                    continue
                receiver = m[0]
                gated_optimizer = receiver in facts.prepared and facts.is_optimizer(receiver)
                if gated_optimizer and first_backward is not None and call.lineno < first_backward:
                    yield self.violation(
                        call,
                        Text(
                            f"`{receiver}.zero_grad()` comes before the backward (line {first_backward}) inside "
                            f"`accelerator.accumulate()` (line {block.lineno}): on the micro-step that syncs, "
                            "accelerate lets it run and it clears the gradients of the previous micro-steps, so "
                            "the update sees one micro-batch. Call it after `optimizer.step()`.",
                            f"`{receiver}.zero_grad()` 在 `accelerator.accumulate()`（第 {block.lineno} 行）中位于 "
                            f"backward（第 {first_backward} 行）之前：在同步的那个微步上 accelerate 会执行它，清掉之前"
                            "微步累积的梯度，更新只用到一个微批次。请放在 `optimizer.step()` 之后。",
                        ),
                        gated_by=gate,
                        accumulate_line=block.lineno,
                        backward_line=first_backward,
                    )
                elif gated_optimizer and (
                    between := _backward_before_own_step(nodes, backwards, call, receiver)
                ):
                    backward_line, step_line = between
                    yield self.violation(
                        call,
                        Text(
                            f"`{receiver}.zero_grad()` comes between two backwards inside `accelerator.accumulate()` "
                            f"(line {block.lineno}), before the backward at line {backward_line} whose gradients "
                            f"`{receiver}.step()` (line {step_line}) applies: on the micro-step that syncs, accelerate "
                            "lets it run and it clears what the previous micro-steps accumulated, so that step sees "
                            "one micro-batch. Zero the gradients once, after the block's last step.",
                            f"`{receiver}.zero_grad()` 在 `accelerator.accumulate()`（第 {block.lineno} 行）中位于两次 "
                            f"backward 之间，在第 {backward_line} 行的 backward 之前，而 `{receiver}.step()`（第 {step_line} "
                            "行）要用这次 backward 的梯度：在同步的那个微步上 accelerate 会执行它，清掉之前微步累积的梯度，"
                            "该次更新只用到一个微批次。请在块内最后一次 step 之后再清零梯度。",
                        ),
                        gated_by=gate,
                        accumulate_line=block.lineno,
                        backward_line=backward_line,
                    )
                elif not gated_optimizer and (facts.unprepared(receiver) or not facts.is_optimizer(receiver)):
                    yield self.violation(
                        call,
                        Text(
                            f"`{receiver}.zero_grad()` inside `accelerator.accumulate()` (line {block.lineno}) is "
                            "not an optimizer accelerate prepared, so accelerate does not skip it: it runs on "
                            "every micro-step and only the last micro-batch's gradient survives.",
                            f"`accelerator.accumulate()`（第 {block.lineno} 行）中的 `{receiver}.zero_grad()` 不是 "
                            "accelerate 准备过的优化器，accelerate 不会跳过它：每个微步都执行，只有最后一个微批次的梯度被保留。",
                        ),
                        gated_by=gate,
                        accumulate_line=block.lineno,
                    )

    def _guard_before_backward(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        """The plain-loop form of the ordering bug (DLRM): ``if last: optimizer.zero_grad()``, then the
        micro-batch's backward, then ``if last: optimizer.step()`` under the very same test. On the
        micro-step that steps, the gradients of the earlier micro-steps are cleared before the last
        backward, so the update sees one micro-batch. A different test (``if i % accum == 0:`` before
        backward: the first micro-step of a window) is the correct idiom and is not flagged."""
        for loop in accumulation_window(facts):
            if loop.shape != "guarded":
                continue
            guarded = [s for s in unconditional(loop.loop.body) if isinstance(s, ast.If)]
            backwards = [
                getattr(n, "lineno", 0)
                for n in unconditional_nodes(facts, loop.loop.body)
                if facts.backward(n) is not None
            ]
            for zero_if in guarded:
                if not is_accum_guard(zero_if.test, facts):
                    continue
                zeros = [
                    n for n in unconditional_nodes(facts, zero_if.body) if _zero_grad_of_optimizer(facts, n)
                ]
                if not zeros:
                    continue
                before = [s for s in zero_if.body if s.lineno < getattr(zeros[0], "lineno", 0)]
                if facts.has_optimizer_step(before):
                    # ``if last: optimizer.step(); optimizer.zero_grad()`` before a second backward (two
                    # losses each stepped under the window's test: MTTOD's ``train_epoch_separate``): the
                    # zero_grad follows an update that applied what the window accumulated, so nothing is
                    # discarded; the ordering bug zeroes with no step before it
                    continue
                later = [b for b in backwards if b > getattr(zeros[0], "lineno", 0)]
                step_if = next(
                    (
                        s
                        for s in guarded
                        if later
                        and s.lineno > later[0]
                        and ast.dump(s.test) == ast.dump(zero_if.test)
                        and facts.has_optimizer_step(s.body)
                    ),
                    None,
                )
                if step_if is None:
                    continue
                count = accumulation_count(facts, loop)
                call = zeros[0]
                receiver = (method(call) or ("optimizer", ""))[0]
                yield self.violation(
                    call,
                    Text(
                        f"`{receiver}.zero_grad()` runs under the same condition as the optimizer step (line "
                        f"{step_if.lineno}) but before the backward (line {later[0]}): on the micro-step that "
                        "steps, it clears the gradients of the previous micro-steps, so the update sees one "
                        "micro-batch. Zero the gradients after `step()`.",
                        f"`{receiver}.zero_grad()` 与优化器更新（第 {step_if.lineno} 行）在同一条件下执行，却位于 backward"
                        f"（第 {later[0]} 行）之前：在更新的那个微步上它清掉了之前微步累积的梯度，更新只用到一个微批次。"
                        "请在 `step()` 之后清零梯度。",
                    ),
                    gated_by=count_gate(ctx, count) if count is not None else None,
                    accumulation_loop_line=loop.loop.lineno,
                    optimizer_step_line=loop.step_line,
                    backward_line=later[0],
                )


def _zero_grad_of_optimizer(facts: LoopFacts, node: ast.AST) -> bool:
    m = method(node)
    return bool(m and m[1] == "zero_grad" and (facts.is_optimizer(m[0]) or m[0] in facts.optimizers))


def _backward_before_own_step(
    nodes: list[ast.AST], backwards: list[int], zero: ast.Call, receiver: str | None
) -> tuple[int, int] | None:
    """``(backward line, step line)`` when, after ``receiver.zero_grad()`` in an accumulate block, a
    backward runs and then ``receiver.step()`` (img2img-turbo-style blocks, S3Diff: ``backward(loss);
    optimizer.step(); optimizer.zero_grad()`` then ``backward(lossG); optimizer.step()`` with the same
    optimizer). accelerate skips the prepared optimizer's ``step`` and ``zero_grad`` on the micro-steps
    that do not sync, so both losses pile up there; on the one that syncs the first step takes them all,
    the zero_grad clears them, and the second step sees the second loss of one micro-batch. A
    zero_grad followed only by another optimizer's backward and step (a GAN's generator then
    discriminator) is fine."""
    later = [b for b in backwards if b > zero.lineno]
    if not later:
        return None
    for node in nodes:
        m = method(node)
        if m == (receiver, "step") and getattr(node, "lineno", 0) > later[0]:
            return later[0], node.lineno  # type: ignore[attr-defined]  # a Call: it has a line
    return None
