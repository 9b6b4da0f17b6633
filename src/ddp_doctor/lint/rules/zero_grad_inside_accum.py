"""zero-grad-inside-accum: ``zero_grad()`` runs on every micro-step of an accumulation loop.

Zeroing between micro-steps discards the gradients accumulated so far, so only the last
micro-batch contributes to the update (torch docs, "gradient accumulation": zero once per
optimizer step). Only unconditional calls in the micro-step scope are flagged
(``ddp_doctor.lint.loops``): ``if i % accum == 0: optimizer.zero_grad()`` is correct, and
accelerate's prepared optimizer skips non-final zero_grad calls by itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, method
from ddp_doctor.lint.loops import LoopFacts, micro_scope
from ddp_doctor.lint.rules.base import Rule, Violation


class ZeroGradInsideAccum(Rule):
    id = "zero-grad-inside-accum"
    required = (("zero_grad",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if not self.applies(ctx):
            return
        for loop in facts.accumulation_loops():
            for node in micro_scope(facts, loop):
                m = method(node)
                if m and m[1] == "zero_grad" and m[0] not in facts.prepared:
                    assert isinstance(node, ast.Call)
                    yield self.violation(
                        node, f"`{m[0]}.zero_grad()` runs on every micro-step of the accumulation loop at line "
                        f"{loop.loop.lineno} (the optimizer steps at line {loop.step_line}): only the last "
                        "micro-batch's gradient survives.",
                        f"`{m[0]}.zero_grad()` 在第 {loop.loop.lineno} 行的梯度累积循环的每个微步都会执行（优化器在第 "
                        f"{loop.step_line} 行更新）：只有最后一个微批次的梯度被保留。",
                        accumulation_loop_line=loop.loop.lineno, optimizer_step_line=loop.step_line)
