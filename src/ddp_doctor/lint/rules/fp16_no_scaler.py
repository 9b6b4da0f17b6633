"""fp16-no-scaler: training under float16 autocast with no GradScaler in sight.

float16 has a 5-bit exponent: gradients below ~6e-8 flush to zero and above 65504 overflow,
which GradScaler's dynamic loss scaling exists to prevent (torch docs, "Automatic Mixed
Precision": "if the forward pass for a particular op has float16 inputs, the backward pass
will produce float16 gradients ... may underflow"). Flagged when an autocast is float16 — an
explicit ``dtype=torch.float16``/``torch.half``, or ``torch.cuda.amp.autocast()`` /
``torch.autocast("cuda")`` whose default is float16 — the file runs backward, and it has no
``*GradScaler``, no ``.scale(...)`` call, and no accelerate/Lightning/DeepSpeed (they scale
themselves). A dtype held in a variable is not guessed at.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, keyword, method
from ddp_doctor.lint.loops import LoopFacts, backward_of
from ddp_doctor.lint.rules.base import Rule, Violation

AUTOCAST = "torch.amp.autocast"
CUDA_AUTOCAST = "torch.cuda.amp.autocast"  # defaults to float16
FP16 = "torch.float16"
SELF_SCALING = ("accelerate", "lightning", "pytorch_lightning", "deepspeed")


class Fp16NoScaler(Rule):
    id = "fp16-no-scaler"
    required = (("autocast",), ("backward",))

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if not self.applies(ctx):
            return
        if any(ctx.imports_module(m) for m in SELF_SCALING):
            return
        if any("GradScaler" in w for w in ctx.words):
            return  # a scaler class is named somewhere (torch.amp, ShardedGradScaler, ...)
        calls = ctx.of_type(ast.Call)
        if not any(backward_of(n) for n in calls) or any(
            (method(n) or (None, ""))[1] == "scale" for n in calls
        ):
            return
        for n in calls:
            if self._is_fp16_autocast(ctx, n):
                yield self.violation(
                    n,
                    f"`{ctx.segment(n)}` trains in float16 but no GradScaler is used: small gradients underflow "
                    "to zero, large ones overflow.",
                    f"`{ctx.segment(n)}` 以 float16 训练但没有使用 GradScaler：小梯度下溢为零，大梯度溢出。",
                    autocast=ctx.segment(n),
                )

    @staticmethod
    def _is_fp16_autocast(ctx: FileContext, call: ast.Call) -> bool:
        qual = ctx.call_qualname(call)
        if qual not in (AUTOCAST, CUDA_AUTOCAST):
            return False
        enabled = keyword(call, "enabled")
        if enabled is not None and not (isinstance(enabled, ast.Constant) and enabled.value is True):
            return False  # disabled, or enabled by a runtime flag we cannot read
        dtype = keyword(call, "dtype")
        if dtype is None and qual == AUTOCAST and len(call.args) > 1:
            dtype = call.args[1]
        if dtype is not None:
            return ctx.qualname(dtype) == FP16
        if qual == CUDA_AUTOCAST:
            return True
        device = keyword(call, "device_type") or (call.args[0] if call.args else None)
        return isinstance(device, ast.Constant) and device.value == "cuda"
