"""scheduler-per-microstep: ``scheduler.step()`` runs on every micro-step of an accumulation loop.

The schedule is defined in optimizer steps; stepping it per micro-batch ends warmup (and runs
the decay) accumulation-count times too early (torch docs, "How to adjust learning rate":
call ``scheduler.step()`` after ``optimizer.step()``). Only unconditional calls on a receiver
known to be a scheduler (built by ``torch.optim.lr_scheduler``/``transformers.get_*schedule*``,
or named ``*sched*``) are flagged; accelerate-prepared schedulers skip non-final steps.
"""

from __future__ import annotations

from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.loops import LoopFacts, micro_method_calls
from ddp_doctor.lint.rules.base import Rule, Violation


class SchedulerPerMicrostep(Rule):
    id = "scheduler-per-microstep"
    required = (("backward",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        for loop, node, receiver in micro_method_calls(facts, "step"):
            if not facts.is_scheduler(receiver):
                continue
            yield self.violation(
                node,
                f"`{receiver}.step()` runs on every micro-step of the accumulation loop at line "
                f"{loop.loop.lineno}, but the optimizer steps only at line {loop.step_line}: the schedule "
                "advances accumulation-count times too fast.",
                f"`{receiver}.step()` 在第 {loop.loop.lineno} 行的梯度累积循环的每个微步都会执行，而优化器只在第 "
                f"{loop.step_line} 行更新：学习率调度快了累积步数倍。",
                accumulation_loop_line=loop.loop.lineno,
                optimizer_step_line=loop.step_line,
            )
