"""The gradients the optimizer steps on: the `gradsync` record of docs/run-format.md.

Read in the optimizer's step pre-hook (after whatever the script did to `.grad` once the backward
returned: a second all-reduce, a division, a clip), at the steps `gradsync.due` names (the first
:data:`gradsync.FIRST_STEPS` and every SPARSE × `every`), on ranks of a multi-process run:

* ``norms``: ‖g_p‖ of every parameter the optimizer holds (float32, one `_foreach_norm` per
  device), only while a DDP model is watched (its gradients are replicas after a synced step:
  bit-identical on every rank; FSDP/ZeRO shards differ by design and are not recorded). The
  analysis compares ranks parameter by parameter (grads-not-synced). Every step (not only due
  ones) the step record carries ``grad_digest`` = Σ_p w_p ‖g_p‖ (float64, fixed weights w_p in
  [1, 2)), fetched with the window's other values: the analysis compares it across ranks at
  every step and names the parameters from the nearest `gradsync` record.
* ``grad_dot_step`` (step record, every step): Σ_p ⟨g_p, p⟩ over the parameters the DDP local
  hooks watch, and ``grad_dot_local``: the same sum of this rank's local gradient, read in those
  hooks (gradsync.py) on the step's last synced micro-step, ÷ the GradScaler scale it ran with. ⟨·, p⟩ is linear and p is
  the same on every replica, so DDP's average gives dot_step = mean over ranks of dot_local; a
  gradient scaled k× after the backward gives k× that (grad-scale-wrong).
* ``sq_step``: Σ_p ‖local(g_p)‖² (this rank's shard under FSDP2) of the gradients the optimizer
  steps on, and under FSDP2 ``sq_reduced``: the same sum over the same parameters read when the
  step's last synced backward returned (FSDP2 has reduce-scattered and accumulated into `.grad`
  by then; one `_foreach_norm`, on due steps only). √(sq_step / sq_reduced) is the factor this
  rank's gradient was scaled by between the backward and the step — its clip coefficient
  (fsdp-clip-wrong on FSDP2: a clip over `grad.to_local()` scales each rank by its own shard's
  norm, so the ranks' coefficients differ; a clip over the DTensors scales all by one).

The step-record values travel with the window's own transfer; one more per `gradsync`
record; no collective, nothing written to a gradient.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from ddp_doctor.probe.instruments import gradsync, params
from ddp_doctor.probe.state import PROBE, guarded
from ddp_doctor.probe.steps import Micro, dtensor_type, local

# the names of the last record that carried them: a record repeats them only when they change
_names: list[tuple[str, ...]] = []
# FSDP2, due steps: {"step", "ids" (id() of each parameter: no reference kept), "norms"} of the
# local gradients when the step's last synced backward returned (end_backward)
_reduced: dict[str, object] = {}
GOLDEN = 0.6180339887498949


def _named(optimizer: torch.optim.Optimizer) -> list[tuple[str, torch.Tensor]]:
    """(name, parameter) of the optimizer's parameters with a gradient, in its group order."""
    return [
        (PROBE.param_names.get(id(p), f"group{g}.{i}"), p)
        for g, group in enumerate(optimizer.param_groups)
        for i, p in enumerate(group["params"])
        if p.grad is not None
    ]


def _weights(n: int, device: torch.device) -> torch.Tensor:
    """Fixed weights in [1, 2) for the digest: a permutation of the norms changes it."""
    return 1.0 + torch.remainder(torch.arange(n, dtype=torch.float64, device=device) * GOLDEN, 1.0)


@guarded("stepgrads")
def end_backward(micro: Micro) -> None:
    """FSDP2, due steps: ‖local(g_p)‖ of every parameter once a synced backward returned."""
    if not PROBE.fsdp or micro.sync == 0 or not dist.is_initialized() or dist.get_world_size() < 2:
        return
    step = PROBE.step_index()
    if not gradsync.due(step):
        return
    held = [p for _, p in params.trainable() if p.grad is not None]
    if not held:
        return
    grads = [local(p.grad) for p in held if p.grad is not None]
    device = grads[0].device
    norms = torch.stack([n.to(device) for n in torch._foreach_norm(grads, 2, dtype=torch.float32)])
    _reduced.clear()
    _reduced.update(step=step, ids={id(p): i for i, p in enumerate(held)}, norms=norms)


def _sq_reduced(
    reduced: dict[str, object], named: list[tuple[str, torch.Tensor]], step: int
) -> torch.Tensor | None:
    """Σ_p ‖g_p‖² of the norms end_backward read, over the optimizer's parameters (None unless all were read)."""
    ids, norms = reduced.get("ids"), reduced.get("norms")
    if reduced.get("step") != step or not isinstance(ids, dict) or not isinstance(norms, torch.Tensor):
        return None
    index = [ids.get(id(p)) for _, p in named]
    if any(i is None for i in index):
        return None
    picked = norms[torch.tensor(index, dtype=torch.long, device=norms.device)]
    return picked.to(torch.float64).square().sum()


@guarded("stepgrads")
def before_step(optimizer: torch.optim.Optimizer) -> None:
    """Every step: the digest and the two Σ⟨g, p⟩ (step record); at due steps the `gradsync` record."""
    steps = PROBE.steps
    step = PROBE.step_index()
    reduced = dict(_reduced)  # read by end_backward for this step; never kept past it
    _reduced.clear()
    if not dist.is_initialized() or dist.get_world_size() < 2:
        return
    due = gradsync.due(step)
    cls = dtensor_type()
    named = _named(optimizer)
    sharded = PROBE.fsdp or (cls is not None and any(isinstance(p.grad, cls) for _, p in named))
    replicated = gradsync.watching() and not sharded
    if not named or not (due or replicated):
        return
    grads = [local(p.grad) for _, p in named if p.grad is not None]
    device = grads[0].device
    norms = torch.stack([n.to(device) for n in torch._foreach_norm(grads, 2, dtype=torch.float32)])
    if replicated:  # fetched with the step window (steps.close): no transfer of its own
        steps.before_step["grad_digest"] = (norms.to(torch.float64) * _weights(len(norms), device)).sum()
        hooked = [(g, p) for (_, p), g in zip(named, grads) if id(p) in gradsync._hooked]
        micro = next((m for m in reversed(steps.micros) if m.local_dot is not None), None)
        if hooked and micro is not None and micro.local_dot is not None:
            scale = micro.scale.to(device) if micro.scale is not None else None
            local_dot = micro.local_dot.to(device)
            steps.before_step["grad_dot_step"] = torch.stack(
                [gradsync.dot(g, p).to(device) for g, p in hooked]
            ).sum()
            steps.before_step["grad_dot_local"] = local_dot / scale if scale is not None else local_dot
    if not due:
        return
    sq_reduced = _sq_reduced(reduced, named, step) if sharded else None
    head = [norms.square().sum().reshape(1).to(torch.float64)]
    if sq_reduced is not None:
        head.append(sq_reduced.reshape(1).to(device))
    flat = torch.cat([*head, norms.to(torch.float64)]).tolist()
    record: dict[str, object] = {"kind": "gradsync", "step": step, "sq_step": flat[0]}
    if sq_reduced is not None:
        record["sq_reduced"] = flat[1]
    flat = flat[:1] + flat[len(head) :]
    if replicated:
        record["norms"] = flat[1:]
        names = tuple(n for n, _ in named)
        if not _names or _names[-1] != names:
            _names[:] = [names]
            record["names"] = list(names)
            record["shapes"] = [list(p.shape) for _, p in named]
    PROBE.emit(record)


def release() -> None:
    _names.clear()
    _reduced.clear()
