"""scheduler-per-microstep: ``scheduler.step()`` runs on every micro-step of an accumulation loop.

The schedule is defined in optimizer steps; stepping it per micro-batch ends warmup (and runs
the decay) accumulation-count times too early (torch docs, "How to adjust learning rate":
call ``scheduler.step()`` after ``optimizer.step()``). Only unconditional calls on a receiver
known to be a scheduler (built by ``torch.optim.lr_scheduler``/``transformers.get_*schedule*``,
or named ``*sched*``) are flagged. Inside ``with accelerator.accumulate(...)`` a scheduler that
accelerate prepared skips the non-final steps by itself; one that was not prepared (only the
optimizer went through ``accelerator.prepare``) steps on every micro-batch and is flagged,
config-gated when the accumulation steps come from configuration.

A schedule whose lengths are multiplied by the loop's own accumulation count when it is built
(``get_scheduler(..., num_warmup_steps=warmup * args.gradient_accumulation_steps)``, Latte) is
counted in micro-steps on purpose: stepping it per micro-step keeps the schedule the author meant.
So is one whose lengths are taken from the batches of an epoch (``len(train_loader) * epochs``,
``epochs * (len(dataset) // batch_size)``) with no part for the accumulation count
(``lint/schedule_lengths.py``): one step per micro-batch runs it over the training it was sized for
(dialog_model, OpenChemFold, arcface_torch); divided by the count (``len(loader) // accum``) it
is counted in optimizer steps and is flagged.

Inside the loop, an ``if`` the loop cannot change (``if scheduler is not None:``, ``if mode ==
"train":``) runs on every pass when it holds (``lint/loop_invariant.py``).

A ``step`` told where the schedule is (``lr_scheduler.step(cur_epoch=e, cur_step=i)``, LAVIS and
timm style; torch's ``step(epoch)``) sets the position rather than advancing it, so calling it on
every micro-step does not run the schedule faster: only argument-less ``step()`` is flagged.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, method
from ddp_doctor.lint.ignite_events import per_micro_step_handlers
from ddp_doctor.lint.loops import (
    LoopFacts,
    accelerate_accumulate_blocks,
    accelerator_accumulates,
    accumulation_count,
    accumulation_window,
    micro_method_calls,
    unconditional_nodes,
)
from ddp_doctor.lint.rules.base import Rule, Violation
from ddp_doctor.lint.schedule_lengths import schedule_counts_batches


class SchedulerPerMicrostep(Rule):
    id = "scheduler-per-microstep"
    project_facts = frozenset({"call_arguments"})
    flagged = (
        "`scheduler.step()` unconditionally on every micro-step (also outside an `if last:` whose "
        "`last = (i + 1) % accum == 0`); the receiver is built by "
        "`torch.optim.lr_scheduler`/`transformers.get_*schedule*` or named `*sched*`; inside "
        "`accelerator.accumulate()`, a scheduler that was not prepared (config-gated by the "
        "accumulation steps)"
    )
    not_flagged = (
        "step under the accumulation guard or after the micro-loop, accelerate-prepared schedulers, "
        "a schedule built in micro-steps (`num_warmup_steps=args.warmup * args.accum_steps`, the "
        "loop's own accumulation count), a schedule sized in batches with no accumulation count in it "
        "(`num_training_steps=len(train_loader) * epochs`), "
        "a scheduler handed in to a file that prepares nothing, HF Trainer, a step told its position "
        "(`sched.step(cur_epoch=e, cur_step=i)`)"
    )
    required = (("backward",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        for loop, node, receiver in micro_method_calls(facts, "step"):
            if not facts.is_scheduler(receiver) or _sets_position(node):
                continue
            count = accumulation_count(facts, loop)
            if (
                count is not None
                and receiver
                and (
                    _counts_micro_steps(ctx, receiver, count) or schedule_counts_batches(ctx, receiver, count)
                )
            ):
                continue
            yield self.violation(
                node,
                Text(
                    f"`{receiver}.step()` runs on every micro-step of "
                    f"{loop.where_en}, but the optimizer steps only at line {loop.step_line}: the schedule "
                    "advances accumulation-count times too fast.",
                    f"`{receiver}.step()` 在{loop.where_zh}的每个微步都会执行，而优化器只在第 "
                    f"{loop.step_line} 行更新：学习率调度快了累积步数倍。",
                ),
                accumulation_loop_line=loop.loop.lineno,
                optimizer_step_line=loop.step_line,
            )
        yield from self._ignite_handlers(ctx, facts)
        blocks = accelerate_accumulate_blocks(facts)
        if not blocks:
            return
        accumulates, gate = accelerator_accumulates(ctx)
        if not accumulates:
            return
        for block in blocks:
            for stmt_node in unconditional_nodes(facts, block.body):
                m = method(stmt_node)
                if (
                    not m
                    or m[1] != "step"
                    or not facts.unprepared(m[0])
                    or not facts.is_scheduler(m[0])
                    or _sets_position(stmt_node)
                ):
                    continue
                yield self.violation(
                    stmt_node,
                    Text(
                        f"`{m[0]}.step()` inside `accelerator.accumulate()` (line {block.lineno}) was not passed "
                        "to `accelerator.prepare`, so accelerate does not skip it on non-final micro-steps: the "
                        "schedule advances once per micro-batch, not once per optimizer step.",
                        f"`accelerator.accumulate()`（第 {block.lineno} 行）中的 `{m[0]}.step()` 没有经过 "
                        "`accelerator.prepare`，accelerate 不会在非最终微步跳过它：调度按微批次而不是按优化器步推进。",
                    ),
                    gated_by=gate,
                    accumulate_line=block.lineno,
                )

    def _ignite_handlers(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        """An accumulation step function run by an Ignite ``Engine``, whose per-iteration handler
        steps a scheduler (ai4code: ``@trainer.on(Events.ITERATION_COMPLETED)`` ...
        ``scheduler.step()``): the schedule advances on every micro-step."""
        if "ignite" not in ctx.words:
            return
        for loop in accumulation_window(facts):
            if loop.shape != "function" or not isinstance(loop.loop, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for handler in per_micro_step_handlers(ctx, loop.loop):
                for node in unconditional_nodes(facts, handler.body):
                    m = method(node)
                    if not m or m[1] != "step" or not facts.is_scheduler(m[0]) or _sets_position(node):
                        continue
                    yield self.violation(
                        node,
                        Text(
                            f"`{m[0]}.step()` in the Ignite handler `{handler.name}` runs after every call "
                            f"of {loop.where_en}, but the optimizer steps only at line {loop.step_line}: "
                            "the schedule advances accumulation-count times too fast.",
                            f"Ignite 处理函数 `{handler.name}` 中的 `{m[0]}.step()` 在{loop.where_zh}的每次调用后"
                            f"都会执行，而优化器只在第 {loop.step_line} 行更新：学习率调度快了累积步数倍。",
                        ),
                        accumulation_loop_line=loop.loop.lineno,
                        optimizer_step_line=loop.step_line,
                    )


def _sets_position(call: ast.AST) -> bool:
    """``sched.step(epoch, cur_step=i)``: the caller says where the schedule is (a stateless
    schedule keyed by the iteration index), so a call per micro-step does not advance it."""
    return isinstance(call, ast.Call) and bool(call.args or call.keywords)


def _counts_micro_steps(ctx: FileContext, receiver: str, count: ast.expr) -> bool:
    """The scheduler assigned to ``receiver`` in this file is built with a length multiplied by the
    loop's accumulation count ``count`` (compared as written)."""
    written = ast.unparse(count)
    for assign in ctx.of_type(ast.Assign):
        if not isinstance(assign.value, ast.Call) or not any(dotted(t) == receiver for t in assign.targets):
            continue
        call = assign.value
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            for n in ast.walk(arg):
                if (
                    isinstance(n, ast.BinOp)
                    and isinstance(n.op, ast.Mult)
                    and written in (ast.unparse(n.left), ast.unparse(n.right))
                ):
                    return True
    return False
