"""scheduler-per-microstep: ``scheduler.step()`` runs on every micro-step of an accumulation loop.

The schedule is defined in optimizer steps; stepping it per micro-batch ends warmup (and runs
the decay) accumulation-count times too early (torch docs, "How to adjust learning rate":
call ``scheduler.step()`` after ``optimizer.step()``). Only unconditional calls on a receiver
known to be a scheduler (built by ``torch.optim.lr_scheduler``/``transformers.get_*schedule*``,
or named ``*sched*``) are flagged; accelerate-prepared schedulers skip non-final steps.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, method
from ddp_doctor.lint.loops import LoopFacts, micro_scope
from ddp_doctor.lint.rules.base import Rule, Violation


class SchedulerPerMicrostep(Rule):
    id = "scheduler-per-microstep"
    required = (("backward",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if not self.applies(ctx):
            return
        for loop in facts.accumulation_loops():
            for node in micro_scope(facts, loop):
                m = method(node)
                if m and m[1] == "step" and facts.is_scheduler(m[0]) and m[0] not in facts.prepared:
                    assert isinstance(node, ast.Call)
                    yield self.violation(
                        node, f"`{m[0]}.step()` runs on every micro-step of the accumulation loop at line "
                        f"{loop.loop.lineno}, but the optimizer steps only at line {loop.step_line}: the schedule "
                        "advances accumulation-count times too fast.",
                        f"`{m[0]}.step()` 在第 {loop.loop.lineno} 行的梯度累积循环的每个微步都会执行，而优化器只在第 "
                        f"{loop.step_line} 行更新：学习率调度快了累积步数倍。",
                        accumulation_loop_line=loop.loop.lineno, optimizer_step_line=loop.step_line)
