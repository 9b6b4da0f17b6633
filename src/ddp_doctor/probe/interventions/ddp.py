"""`ddp.bucket_cap_mb` / `ddp.find_unused`: keyword overrides in `DistributedDataParallel.__init__`."""

from __future__ import annotations

from typing import Any

from ddp_doctor.probe.interventions.base import (
    EFFECTS,
    TAG,
    Intervention,
    bool_word,
    guard_name,
    positive_float,
)
from ddp_doctor.probe.state import guarded, patch

# key -> (DDP keyword, value); filled by `_apply` before it patches, read at every DDP construction.
_OVERRIDES: dict[str, tuple[str, object]] = {}


@guarded(guard_name("ddp"), everywhere=True)
def _override(kwargs: dict[str, Any]) -> None:
    for key, (kwarg, value) in _OVERRIDES.items():
        kwargs[kwarg] = value
        EFFECTS[key] += 1


def _apply(key: str, kwarg: str) -> Any:
    def apply(value: object) -> None:
        from torch.nn.parallel import DistributedDataParallel

        _OVERRIDES[key] = (kwarg, value)

        def make(original: Any) -> Any:
            def init(self: Any, *args: Any, **kwargs: Any) -> Any:
                _override(kwargs)
                return original(self, *args, **kwargs)

            return init

        patch(DistributedDataParallel, "__init__", make, tag=TAG)

    return apply


INTERVENTIONS = (
    Intervention(
        "ddp.bucket_cap_mb",
        "float > 0",
        positive_float,
        "`DistributedDataParallel(..., bucket_cap_mb=…)`.",
        "ddp.bucket_cap_mb=100",
        apply=_apply("ddp.bucket_cap_mb", "bucket_cap_mb"),
    ),
    Intervention(
        "ddp.find_unused",
        "true / false",
        bool_word,
        "`DistributedDataParallel(..., find_unused_parameters=…)`.",
        "ddp.find_unused=false",
        apply=_apply("ddp.find_unused", "find_unused_parameters"),
    ),
)
