"""Micro-steps and their loss: every `torch.autograd.backward` call is one micro-step.

`Tensor.backward()`, accelerate's `backward` and HF Trainer all go through
`torch.autograd.backward` (docs/probe.md, measured facts). The root's value is the micro-step loss; when it came
out of `GradScaler.scale`, the value recorded is the loss before scaling. Re-entrant calls
(reentrant activation checkpointing runs backward inside backward) are not micro-steps.
`torch.autograd.grad` users are not seen.

Before the first backward of each watched DDP model, the comm hook is registered (DDP accepts one
hook, and only before the first backward; see instruments/commhook.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ddp_doctor.probe.instruments import commhook, scaler
from ddp_doctor.probe.state import PROBE, Nesting, guarded, patch

_nesting = Nesting()


@guarded("backward")
def _before(tensors: Any) -> None:
    steps = PROBE.steps
    if steps.reevaluating:  # a closure called again inside one step (LBFGS): not a micro-step
        return
    if steps.pending is not None:  # a scaler-less window left open (update() never called)
        steps.write_pending()
    root = tensors[0] if isinstance(tensors, (list, tuple)) else tensors
    loss, scale = None, None
    if isinstance(root, torch.Tensor) and root.numel() == 1:
        unscaled = scaler.unscaled_loss(root)
        if unscaled is not None:
            loss, scale = unscaled
        else:
            loss = root.detach()
    steps.begin_backward(loss, scale)
    PROBE.mark_training()
    commhook.register_pending()


def install() -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            with _nesting.enter() as outer:
                if outer:
                    _before(tensors)
                try:
                    return original(tensors, *args, **kwargs)
                finally:
                    if outer:
                        _after()

        return backward

    patch(torch.autograd, "backward", make)


@guarded("backward")
def _after() -> None:
    PROBE.steps.current = None
