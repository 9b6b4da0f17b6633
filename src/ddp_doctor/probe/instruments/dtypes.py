"""The dtypes training stores and steps in: the `config`/`dtypes` record (mixed-precision policy, issue 25 d).

Once, at the first optimizer step (after every wrapper has cast what it casts at construction:
FSDP1's `buffer_dtype`, DDP's mixed precision, a `model.to(torch.bfloat16)`), the number of
elements per dtype of

* ``model_params``: the watched model's parameters (this rank's shards under FSDP2: a DTensor's
  dtype is its sharded parameter's; the dtype FSDP computes in is the policy's `param_dtype`,
  recorded by the fsdp instruments); without a watched model (a plain single process), the
  optimizer's;
* ``optimizer_params``: the tensors the optimizer steps (a DeepSpeed engine's flat fp32 master
  copies, Apex-style fp32 masters);
* ``grads``: their gradients at that step (float32 gradients of bfloat16 parameters are upcast
  gradients; FSDP1's `keep_low_precision_grads` leaves them in the low dtype);
* ``buffers``: the watched model's buffers.

Reads metadata only (dtype and element count): no tensor value, no collective.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import torch

from ddp_doctor.probe.state import PROBE, guarded
from ddp_doctor.probe.steps import local

_emitted: list[bool] = []


def _counts(tensors: Iterable[torch.Tensor | None]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for t in tensors:
        if isinstance(t, torch.Tensor):
            out[str(t.dtype).removeprefix("torch.")] += local(t).numel()
    return dict(sorted(out.items()))


@guarded("dtypes")
def first_step(optimizer: torch.optim.Optimizer) -> None:
    """The `config`/`dtypes` record, once per process."""
    if _emitted:
        return
    _emitted.append(True)
    stepped = [p for group in optimizer.param_groups for p in group["params"]]
    models = PROBE.watched_models()
    PROBE.emit(
        {
            "kind": "config",
            "what": "dtypes",
            "step": PROBE.step_index(),
            # no wrapper seen (one plain process): the parameters are the ones the optimizer steps
            "model_params": _counts(p for m in models for p in m.parameters())
            if models
            else _counts(stepped),
            "optimizer_params": _counts(stepped),
            "grads": _counts(p.grad for p in stepped),
            "buffers": _counts(b for m in models for b in m.buffers()),
        }
    )
