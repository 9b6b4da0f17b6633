"""zero-grad-inside-accum: ``zero_grad()`` runs on every micro-step of an accumulation loop.

Zeroing between micro-steps discards the gradients accumulated so far, so only the last
micro-batch contributes to the update (torch docs, "gradient accumulation": zero once per
optimizer step). Only unconditional calls in the micro-step scope are flagged
(``ddp_doctor.lint.loops``): ``if i % accum == 0: optimizer.zero_grad()`` is correct, and
accelerate's prepared optimizer skips non-final zero_grad calls by itself.
"""

from __future__ import annotations

from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.loops import LoopFacts, micro_method_calls
from ddp_doctor.lint.rules.base import Rule, Violation


class ZeroGradInsideAccum(Rule):
    id = "zero-grad-inside-accum"
    required = (("zero_grad",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        for loop, node, receiver in micro_method_calls(facts, "zero_grad"):
            yield self.violation(
                node,
                f"`{receiver}.zero_grad()` runs on every micro-step of the accumulation loop at line "
                f"{loop.loop.lineno} (the optimizer steps at line {loop.step_line}): only the last "
                "micro-batch's gradient survives.",
                f"`{receiver}.zero_grad()` 在第 {loop.loop.lineno} 行的梯度累积循环的每个微步都会执行（优化器在第 "
                f"{loop.step_line} 行更新）：只有最后一个微批次的梯度被保留。",
                accumulation_loop_line=loop.loop.lineno,
                optimizer_step_line=loop.step_line,
            )
