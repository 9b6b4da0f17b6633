"""The loss function's own output and its count of valid targets (`loss_fn` in the step record).

The common loss functions of `torch.nn.functional` are wrapped in eager mode (`LOSS_FUNCTIONS`):
the `nn.*Loss` modules, HF transformers' model heads (their `.loss` comes from
`nn.functional.cross_entropy`, `MSELoss`, `BCEWithLogitsLoss`; with reduction="sum" and
num_items_in_batch for causal LMs) and Lightning modules all look them up at call time. The
recorded value and `n_valid` stay tensors until the optimizer step; `n_valid` counts the targets
!= ignore_index (cross_entropy, nll_loss with class indices), else, for reduction="sum", the
terms of the sum (so the analysis can turn it into a mean), else it is null. Inside a torch.compile'd region the wrapper would be traced
into the graph, so it steps aside while compiling; the forward pre-hook's label count
(instruments/data.py) covers that case.

A micro-step carries the loss function's output only when exactly one such call (with grad
enabled) preceded its backward: a loss summed from several (QA heads' start + end, a VAE's
reconstruction + KL) has no single loss-function value, and the analysis falls back on the
backward root. Comparing the value with the backward root reveals a loss not divided by the
accumulation count.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ddp_doctor.probe.state import PROBE, guarded, patch

# The wrapped functions; the two with an `ignore_index` also report how many targets count.
LOSS_FUNCTIONS = (
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
)


def _reduction(bound: inspect.BoundArguments) -> str:
    args = bound.arguments
    size_average, reduce = args.get("size_average"), args.get("reduce")
    if size_average is not None or reduce is not None:  # the deprecated pair overrides `reduction`
        from torch.nn import _reduction

        return str(_reduction.legacy_get_string(size_average, reduce, emit_warning=False))
    return str(args.get("reduction", "mean"))


@guarded("lossfn")
def _observed(
    signature: inspect.Signature, out: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    if not torch.is_grad_enabled() or not isinstance(out, torch.Tensor):
        return
    if out.numel() != 1:
        _unreduced(signature, args, kwargs)
        return
    bound = signature.bind(*args, **kwargs)
    target, reduction = bound.arguments.get("target"), _reduction(bound)
    n_valid = tokens = None
    # class indices only (class probabilities have no ignore_index)
    if (
        "ignore_index" in signature.parameters
        and isinstance(target, torch.Tensor)
        and not target.is_floating_point()
    ):
        ignore = bound.arguments.get("ignore_index", signature.parameters["ignore_index"].default)
        n_valid = tokens = (target != ignore).sum()
    elif reduction == "sum":  # the count a mean divides by, so the analysis can turn it into one
        n_valid = torch.tensor(_terms(bound))
    steps = PROBE.steps
    # `tokens` (not recorded here): the micro-step's token count when no forward hook counted it
    steps.loss_fn = {"value": out.detach(), "reduction": reduction, "n_valid": n_valid, "tokens": tokens}
    steps.loss_fn_calls += 1


def _unreduced(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """reduction="none" (a masked loss summed and divided by hand): no value to record, but the
    target's count != ignore_index is the micro-step's valid tokens (loss_normalization.py)."""
    if "ignore_index" not in signature.parameters:
        return
    bound = signature.bind(*args, **kwargs)
    target = bound.arguments.get("target")
    if _reduction(bound) != "none" or not isinstance(target, torch.Tensor) or target.is_floating_point():
        return
    ignore = bound.arguments.get("ignore_index", signature.parameters["ignore_index"].default)
    PROBE.steps.unreduced_tokens = (target != ignore).sum()


def _terms(bound: inspect.BoundArguments) -> int:
    """How many terms a sum-reduced loss adds: elements of the broadcast input and target, for
    cross_entropy with class probabilities the positions (elements / classes)."""
    x, target = bound.arguments.get("input"), bound.arguments.get("target")
    shapes = [t.shape for t in (x, target) if isinstance(t, torch.Tensor)]
    n = torch.Size(torch.broadcast_shapes(*shapes)).numel() if shapes else 0
    if "ignore_index" in bound.signature.parameters and isinstance(x, torch.Tensor) and x.dim() > 1:
        n //= max(int(x.shape[1]), 1)  # (N, C, ...) class probabilities: one term per position
    return int(n)


def install() -> None:
    for name in LOSS_FUNCTIONS:
        original = getattr(F, name, None)
        if original is None:
            continue
        signature = inspect.signature(original)

        def make(
            original: Callable[..., Any], signature: inspect.Signature = signature
        ) -> Callable[..., Any]:
            def loss_function(*args: Any, **kwargs: Any) -> torch.Tensor:
                out: torch.Tensor = original(*args, **kwargs)
                if not torch.compiler.is_compiling():
                    _observed(signature, out, args, kwargs)
                return out

            return loss_function

        patch(F, name, make)
