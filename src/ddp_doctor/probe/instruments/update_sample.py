"""Every level, every :data:`SAMPLE_EVERY` optimizer steps (after :data:`DENSE_STEPS`, every `--every`
steps): the update/parameter ratio of a few tensors.

For each sampled tensor θ (or its first :data:`MAX_ELEMENTS` elements, flattened):

    ρ = ‖θ_after − θ_before‖ / ‖θ_before‖

the per-step relative update (CS231n "Neural Networks Part 3": about 1e-3 is healthy). Sampling:
per parameter type (embedding, matrix, norm, bias, vector; :func:`param_type`) the first and the
last tensor in model order, so the first and the last layer of each kind are seen. Cost on a
sampled step: a copy of at most ``5 types × 2 tensors × MAX_ELEMENTS`` elements before
`optimizer.step()` and two norms per tensor after it, with one host transfer; nothing on other
steps. Level `full` measures every parameter (instruments/full.py); this sample is what the
default level decides lr-too-high from (update-ratio-high). FSDP2/DTensor parameters are sampled
on this rank's local shard, so no collective is issued.
"""

from __future__ import annotations

from typing import Any

import torch

from ddp_doctor.probe.instruments import params
from ddp_doctor.probe.instruments.full import layer_group
from ddp_doctor.probe.state import PROBE, guarded

SAMPLE_EVERY = 5  # optimizer steps between samples (steps 0, 5, 10, ...) during the first DENSE_STEPS
DENSE_STEPS = 200  # later, every `--every` steps (default 50): bounded records on long runs
MAX_TENSORS_PER_TYPE = 2
MAX_ELEMENTS = 1 << 20  # per tensor: a flat prefix of larger tensors (4 MiB in float32)
_before: dict[str, Any] = {}


def param_type(name: str, p: torch.Tensor, embedding_ids: frozenset[int] = frozenset()) -> str:
    """embedding | norm | bias | matrix | vector, from the module type, the name and the shape."""
    lowered = name.lower()
    if lowered.endswith("bias"):
        return "bias"
    group = layer_group(name)
    if id(p) in embedding_ids or group == "embedding" or "embed" in lowered:
        return "embedding"
    if p.dim() >= 2:
        return "matrix"
    return "norm" if group == "norm" else "vector"


def _local(t: torch.Tensor) -> torch.Tensor:
    to_local = getattr(t, "to_local", None)  # DTensor: this rank's shard, no collective
    return to_local() if callable(to_local) else t


def select(named: list[tuple[str, torch.nn.Parameter]]) -> list[tuple[str, str, torch.nn.Parameter]]:
    """(name, type, parameter) of the sampled tensors: first and last of each type, model order."""
    embedding_ids = frozenset(
        id(p)
        for model in PROBE.watched_models()
        for m in model.modules()
        if isinstance(m, torch.nn.Embedding)
        for p in m.parameters(recurse=False)
    )
    by_type: dict[str, list[tuple[str, torch.nn.Parameter]]] = {}
    for name, p in named:
        by_type.setdefault(param_type(name, p, embedding_ids), []).append((name, p))
    out: list[tuple[str, str, torch.nn.Parameter]] = []
    for kind, items in by_type.items():
        picks = [items[0], items[-1]][:MAX_TENSORS_PER_TYPE] if len(items) > 1 else items
        out.extend((name, kind, p) for name, p in picks)
    return out


def _due(step: int) -> bool:
    options = PROBE.options
    if options is None or step % SAMPLE_EVERY:
        return False
    return step < DENSE_STEPS or step % max(options.every, SAMPLE_EVERY) == 0


@guarded("update_sample")
def before_step(optimizer: torch.optim.Optimizer, step: int) -> None:
    _before.clear()
    if not _due(step):
        return
    chosen = select(params.trainable(optimizer))
    if not chosen:
        return
    _before["step"] = step
    _before["chosen"] = chosen
    _before["old"] = [_local(p.detach()).reshape(-1)[:MAX_ELEMENTS].clone() for _, _, p in chosen]


@guarded("update_sample")
def after_step(step: int) -> None:
    if _before.get("step") != step:
        _before.clear()
        return
    chosen, old = _before["chosen"], _before["old"]
    _before.clear()
    norms = []
    for (_, _, p), o in zip(chosen, old):
        new = _local(p.detach()).reshape(-1)[: o.numel()]
        norms.append(torch.linalg.vector_norm(o, dtype=torch.float32).to(old[0].device))
        norms.append(torch.linalg.vector_norm(new - o, dtype=torch.float32).to(old[0].device))
    values = torch.stack(norms).tolist()  # one host transfer
    tensors = []
    for i, (name, kind, p) in enumerate(chosen):
        tensors.append(
            {
                "name": name,
                "group": layer_group(name),
                "type": kind,
                "numel": p.numel(),
                "sampled": old[i].numel(),
                "param_norm": values[2 * i],
                "update_norm": values[2 * i + 1],
            }
        )
    PROBE.emit({"kind": "update", "step": step, "tensors": tensors})
