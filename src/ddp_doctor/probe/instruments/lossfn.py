"""The loss function's own output and its count of valid targets (`loss_fn` in the step record).

`torch.nn.functional.cross_entropy` is wrapped in eager mode: `nn.CrossEntropyLoss` and HF
transformers (which uses reduction="sum" with num_items_in_batch) look it up at call time. The
recorded value and `n_valid` (targets != ignore_index) stay tensors until the optimizer step.
Inside a torch.compile'd region the wrapper would be traced into the graph, so it steps aside
while compiling; the forward pre-hook's label count (instruments/data.py) covers that case.
Comparing this value with the backward root reveals a loss not divided by the accumulation count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ddp_doctor.probe.state import PROBE, guarded, patch

# Positions of `ignore_index` and `reduction` in F.cross_entropy(input, target, weight,
# size_average, ignore_index, reduce, reduction, label_smoothing).
_IGNORE_POS, _REDUCTION_POS = 4, 6


@guarded("lossfn")
def _observed(out: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if not torch.is_grad_enabled() or not isinstance(out, torch.Tensor) or out.numel() != 1:
        return
    target = args[1] if len(args) > 1 else kwargs.get("target")
    ignore = args[_IGNORE_POS] if len(args) > _IGNORE_POS else kwargs.get("ignore_index", -100)
    reduction = args[_REDUCTION_POS] if len(args) > _REDUCTION_POS else kwargs.get("reduction", "mean")
    n_valid = None
    if isinstance(target, torch.Tensor) and not target.is_floating_point():
        n_valid = (target != ignore).sum()
    PROBE.steps.loss_fn = {"value": out.detach(), "reduction": reduction, "n_valid": n_valid}


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def cross_entropy(*args: Any, **kwargs: Any) -> torch.Tensor:
            out: torch.Tensor = original(*args, **kwargs)
            if not torch.compiler.is_compiling():
                _observed(out, args, kwargs)
            return out

        return cross_entropy

    patch(F, "cross_entropy", make)
