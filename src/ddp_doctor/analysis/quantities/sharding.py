"""The full gradient's squared norm from per-rank `grad_sq_global` values, sharded or not.

With DDP every rank's `grad_sq_global` is ‖ḡ‖² of the whole averaged gradient, so ranks agree and
any one of them (the maximum, robust to a missing value) is the answer. With FSDP each rank
records only ‖shard‖² of its shard of ḡ (docs/run-format.md): the shards of one replica
partition ḡ, so

    ‖ḡ‖² = Σ_ranks ‖shard_r‖² / replicas

where `replicas` is the number of copies of each shard: 1 for FULL_SHARD/SHARD_GRAD_OP and FSDP2,
world / shard-group size for HSDP (HYBRID_SHARD) and NO_SHARD (the `config`/`fsdp` record's
`replicas`). A step where any rank's value is missing gives nan, never a partial sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def shard_replicas(fsdp_config: dict[str, Any] | None) -> int | None:
    """None for unsharded gradients, else the copies of each shard across the world."""
    if not fsdp_config or fsdp_config.get("version") not in (1, 2):
        return None
    value = fsdp_config.get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def global_sq(gsq_global: np.ndarray, replicas: int | None) -> np.ndarray:
    """[ranks, steps] per-rank values → [steps] ‖ḡ‖² (nan where not measurable)."""
    if gsq_global.size == 0:
        return np.full(gsq_global.shape[-1] if gsq_global.ndim == 2 else 0, np.nan)
    if replicas is None:
        out = np.nanmax(gsq_global, axis=0, initial=-np.inf)
        return np.where(np.isfinite(out), out, np.nan)
    complete = np.isfinite(gsq_global).all(axis=0)
    return np.where(complete, np.where(complete, gsq_global, 0.0).sum(axis=0) / replicas, np.nan)
