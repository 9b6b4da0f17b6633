"""Micro-steps and their loss: every `torch.autograd.backward` call is one micro-step.

`Tensor.backward()`, accelerate's `backward` and HF Trainer all go through
`torch.autograd.backward` (docs/probe.md, measured facts). The root's value is the micro-step loss; when it came
out of `GradScaler.scale`, the value recorded is the loss before scaling. Re-entrant calls
(reentrant activation checkpointing runs backward inside backward) are not micro-steps.
`torch.autograd.grad` users are not seen.

Around each micro-step, instruments/gradsync.py reads DDP's gradients (local before the reducer
copies them into its buckets, global once the backward has returned); under FSDP2
instruments/stepgrads.py reads the reduced shards' norms once a synced backward has returned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ddp_doctor.probe.instruments import fingerprints, gradsync, scaler, stepgrads
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
    gradsync.begin_backward(steps.begin_backward(loss, scale))
    fingerprints.begin_backward()
    PROBE.mark_training()


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
    micro, PROBE.steps.current = PROBE.steps.current, None
    if micro is not None:
        gradsync.end_backward(micro)
        stepgrads.end_backward(micro)
        fingerprints.end_backward()
