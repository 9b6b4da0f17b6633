"""`sampler.set_epoch=auto`: a DistributedSampler iterated again without `set_epoch` advances its
epoch itself, so each epoch gets a new order (an explicit `set_epoch` is respected)."""

from __future__ import annotations

from typing import Any

from ddp_doctor.probe.interventions.base import EFFECTS, TAG, Intervention, choice, guard_name
from ddp_doctor.probe.state import guarded, patch

KEY = "sampler.set_epoch"


@guarded(guard_name(KEY), everywhere=True)
def _mark_set(sampler: Any) -> None:
    sampler._ddp_doctor_epoch_set = True


@guarded(guard_name(KEY), everywhere=True)
def _advance(sampler: Any) -> None:
    if getattr(sampler, "_ddp_doctor_iterated", False) and not getattr(
        sampler, "_ddp_doctor_epoch_set", False
    ):
        sampler.epoch += 1
        EFFECTS[KEY] += 1
    sampler._ddp_doctor_iterated = True
    sampler._ddp_doctor_epoch_set = False


def _apply(_: object) -> None:
    from torch.utils.data.distributed import DistributedSampler

    def make_set_epoch(original: Any) -> Any:
        def set_epoch(self: Any, epoch: int) -> None:
            _mark_set(self)
            original(self, epoch)

        return set_epoch

    def make_iter(original: Any) -> Any:
        def iterate(self: Any) -> Any:
            _advance(self)
            return original(self)

        return iterate

    patch(DistributedSampler, "set_epoch", make_set_epoch, tag=TAG)
    patch(DistributedSampler, "__iter__", make_iter, tag=TAG)


INTERVENTIONS = (
    Intervention(
        KEY,
        "`auto`",
        choice("auto"),
        "a `DistributedSampler` iterated again without `set_epoch` in between advances its epoch itself.",
        "sampler.set_epoch=auto",
        apply=_apply,
    ),
)
