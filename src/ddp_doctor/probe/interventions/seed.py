"""`seed=N`: runs that differ only by this seed, even for a script that seeds itself.

Seeds torch, random and numpy at start, and mixes the seed into every later
``torch.manual_seed(s)`` of the script: ``s XOR seed·φ64``, a bijection, so per-rank seeds stay
distinct and all ranks stay consistent. Explicit ``torch.Generator`` seeds are left alone.
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.probe.interventions.base import EFFECTS, TAG, Intervention, guard_name, seed_int
from ddp_doctor.probe.state import guarded, patch

KEY = "seed"
# 2^64 / golden ratio, odd: the usual multiplicative-hash constant (Knuth, TAOCP vol. 3, 6.4).
SEED_MIX = 0x9E3779B97F4A7C15
_U64 = (1 << 64) - 1


def _apply(value: object) -> None:
    import random

    import torch
    import torch.random

    seed = int(value)  # type: ignore[call-overload]
    mix: int = (seed * SEED_MIX) & _U64

    @guarded(guard_name(KEY), everywhere=True)
    def mixed(s: Any) -> int:
        out: int = (int(s) & _U64) ^ mix
        EFFECTS[KEY] += 1
        return out

    def make(original: Any) -> Any:
        def manual_seed(s: Any) -> Any:
            m = mixed(s)
            return original(s if m is None else m)

        return manual_seed

    if getattr(torch.random.manual_seed, "__ddp_doctor_tag__", None) == TAG:
        return  # applied already in this process (state.patch would skip; the seeding must too)
    torch.random.manual_seed(seed)  # still unpatched: the run's own seed
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    EFFECTS[KEY] += 1
    # `torch.manual_seed` is `torch.random.manual_seed` imported: patch both names.
    patch(torch.random, "manual_seed", make, tag=TAG)
    patch(torch, "manual_seed", make, tag=TAG)


INTERVENTIONS = (
    Intervention(
        KEY,
        "int",
        seed_int,
        "seeds torch/random/numpy at start and mixes the seed into every later `torch.manual_seed(s)` "
        "(s XOR seed·φ₆₄: a bijection, so per-rank seeds stay distinct and consistent); explicit "
        "`torch.Generator` seeds are left alone.",
        "seed=1",
        apply=_apply,
    ),
)
