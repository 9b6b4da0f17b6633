"""`dist.destroy_process_group()`: the end of training, while the model is usually still alive.

When the script destroys the default group, the pending step record is written (GradScaler runs
close a step late) and then the final replica checksum (replicas.py), before the group goes. A
subgroup may end mid-run, so only the default group counts. Its own module because it calls into
both optimizer (the step) and replicas (the checksum), and optimizer already calls replicas: kept
in either, the two would import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ddp_doctor.probe.instruments import optimizer, replicas
from ddp_doctor.probe.state import guarded, patch


def install() -> None:
    import torch.distributed as dist

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
            group = args[0] if args else kwargs.get("group")
            if group is None:  # the default group: the end of training (a subgroup may end mid-run)
                _before_destroy()
            return original(*args, **kwargs)

        return destroy_process_group

    patch(dist, "destroy_process_group", make)


# Guarded as "replicas": the hook exists for the final checksum and goes off with that instrument
# (DeepSpeed ZeRO-3 disables it; the pending step is then written at exit, as always).
@guarded("replicas")
def _before_destroy() -> None:
    optimizer.finish_step(optimizer.primary())  # the pending step record comes before the checksum
    replicas.final_checksum(optimizer.primary())
