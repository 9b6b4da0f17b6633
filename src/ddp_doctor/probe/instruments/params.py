"""Which parameters this rank trains, by name: the `params` record and the `unused` record.

Names come from the watched model (the module inside DDP, or the FSDP2 root); parameters an
optimizer holds that no watched model names are called `group{g}.{i}`. A trainable parameter
whose `.grad` is still None at an optimizer step never received a gradient (unused-parameters).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from ddp_doctor.probe.state import PROBE, guarded

_unused_reported: set[tuple[str, ...]] = set()


def watch(wrapper: Any, module: torch.nn.Module) -> None:
    """Remember `module` (the user's model inside `wrapper`) and its parameter names."""
    del wrapper  # the names are the user's, without DDP's "module." prefix
    PROBE.models.append(weakref.ref(module))
    for name, p in module.named_parameters():
        PROBE.param_names.setdefault(id(p), name)


def trainable(optimizer: torch.optim.Optimizer | None = None) -> list[tuple[str, torch.nn.Parameter]]:
    """(name, parameter) in a fixed order: the watched models', else the optimizer's."""
    models = PROBE.watched_models()
    if models:
        seen: set[int] = set()
        out = []
        for model in models:
            for name, p in model.named_parameters():
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    out.append((name, p))
        return out
    if optimizer is None:
        return []
    return [
        (PROBE.param_names.get(id(p), f"group{g}.{i}"), p)
        for g, group in enumerate(optimizer.param_groups)
        for i, p in enumerate(group["params"])
        if p.requires_grad
    ]


@guarded("params")
def report_unused(optimizer: torch.optim.Optimizer | None) -> None:
    names = tuple(name for name, p in trainable(optimizer) if p.grad is None)
    # The first report is written even when empty: "every parameter got a gradient" is a
    # measurement the report needs to rule unused-parameters out; later ones only on change.
    if names not in _unused_reported:
        _unused_reported.add(names)
        PROBE.emit({"kind": "unused", "step": PROBE.step_index(), "names": list(names)})
