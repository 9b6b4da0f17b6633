"""Level `full`, every `every` steps: per-layer-group norms and Adam second-moment statistics.

For each layer group (from parameter names, run-format.md): ‖grad‖, ‖θ‖ and the update norm
‖θ_after − θ_before‖ of this optimizer step (their ratio is the update/parameter ratio, typically
~1e-3 for Adam in LLM training; update-ratio-high). For Adam-style optimizers the share of
second-moment entries v below eps²: there √v < eps, so eps rather than the gradient sets the step
size (adam-eps-dominated). Costs one copy of the parameters on the steps where it runs.
Under FSDP2 every value is computed on this rank's shards (`to_local()`, no collective) and the
record says `"sharded": true`; the analysis combines ranks (norms in quadrature, counts summed).
"""

from __future__ import annotations

from typing import Any

import torch

from ddp_doctor.probe.instruments import params
from ddp_doctor.probe.state import PROBE, guarded
from ddp_doctor.probe.steps import local

# Ordered: the first group whose keys match a parameter name wins.
LAYER_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("embedding", ("embed", "wte", "wpe", "tok_embeddings")),
    ("head", ("lm_head", "head", "output.")),
    ("norm", ("norm", "ln_", ".ln", "layernorm")),
    ("attention", ("attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "wq", "wk", "wv", "wo")),
    ("mlp", ("mlp", "fc", "feed_forward", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3")),
)
_before: dict[str, Any] = {}


def layer_group(name: str) -> str:
    lowered = name.lower()
    for group, keys in LAYER_GROUPS:
        if any(k in lowered for k in keys):
            return group
    return "other"


def _due(step: int) -> bool:
    options = PROBE.options
    return options is not None and options.level == "full" and step % options.every == 0


@guarded("full")
def before_step(optimizer: torch.optim.Optimizer, step: int) -> None:
    _before.clear()
    if not _due(step):
        return
    named = params.trainable(optimizer)
    _before["step"] = step
    _before["named"] = named
    _before["params"] = [local(p).detach().clone() for _, p in named]
    _before["grad_sq"] = [
        torch.linalg.vector_norm(local(p.grad), dtype=torch.float32).square()
        if p.grad is not None
        else torch.zeros((), device=local(p).device)
        for _, p in named
    ]


@guarded("full")
def after_step(optimizer: torch.optim.Optimizer, step: int) -> None:
    if _before.get("step") != step:
        return
    named, old, grad_sq = _before["named"], _before["params"], _before["grad_sq"]
    _before.clear()
    device = local(named[0][1]).device
    param_sq = [
        torch.linalg.vector_norm(local(p).detach(), dtype=torch.float32).square().to(device) for _, p in named
    ]
    update_sq = [
        torch.linalg.vector_norm(local(p).detach() - o, dtype=torch.float32).square().to(device)
        for (_, p), o in zip(named, old)
    ]
    values = torch.stack(
        [torch.stack([g.to(device) for g in grad_sq]), torch.stack(param_sq), torch.stack(update_sq)]
    ).tolist()
    groups: dict[str, dict[str, float]] = {}
    for i, (name, p) in enumerate(named):
        g = groups.setdefault(
            layer_group(name), {"grad_sq": 0.0, "param_sq": 0.0, "update_sq": 0.0, "numel": 0}
        )
        g["grad_sq"] += values[0][i]
        g["param_sq"] += values[1][i]
        g["update_sq"] += values[2][i]
        g["numel"] += local(p).numel()
    PROBE.emit(
        {
            "kind": "full",
            "step": step,
            # FSDP2: every value is this rank's shard; the analysis combines ranks (run-format.md)
            "sharded": any(local(p) is not p for _, p in named),
            "adam": _adam(optimizer),
            "groups": {
                k: {
                    "grad_norm": v["grad_sq"] ** 0.5,
                    "param_norm": v["param_sq"] ** 0.5,
                    "update_norm": v["update_sq"] ** 0.5,
                    "numel": v["numel"],
                }
                for k, v in groups.items()
            },
        }
    )


def release() -> None:
    _before.clear()


def _adam(optimizer: torch.optim.Optimizer) -> list[dict[str, Any]]:
    out = []
    for index, group in enumerate(optimizer.param_groups):
        eps = group.get("eps")
        states = [
            local(optimizer.state[p]["exp_avg_sq"])
            for p in group["params"]
            if p in optimizer.state and "exp_avg_sq" in optimizer.state[p]
        ]
        numel = sum(v.numel() for v in states)
        if eps is None or not numel:
            continue
        below = int(torch.stack([(v < eps * eps).sum() for v in states]).sum().item())
        out.append(
            {"group": index, "eps": eps, "frac_v_below_eps2": below / numel, "below": below, "numel": numel}
        )
    return out
