"""Every lint rule, one class per catalog ID (``ddp_doctor.core.catalog.lint_ids``)."""

from __future__ import annotations

from ddp_doctor.lint.rules.accum_loss_unscaled import AccumLossUnscaled
from ddp_doctor.lint.rules.accum_no_sync_missing import AccumNoSyncMissing
from ddp_doctor.lint.rules.base import Edit, Rule, Violation
from ddp_doctor.lint.rules.batchnorm_unsynced import BatchnormUnsynced
from ddp_doctor.lint.rules.clip_before_unscale import ClipBeforeUnscale
from ddp_doctor.lint.rules.compile_before_ddp import CompileBeforeDdp
from ddp_doctor.lint.rules.find_unused_true import FindUnusedTrue
from ddp_doctor.lint.rules.fp16_no_scaler import Fp16NoScaler
from ddp_doctor.lint.rules.fsdp_clip_wrong import FsdpClipWrong
from ddp_doctor.lint.rules.no_sync_after_forward import NoSyncAfterForward
from ddp_doctor.lint.rules.rank0_only_loss_log import Rank0OnlyLossLog
from ddp_doctor.lint.rules.sampler_missing import SamplerMissing
from ddp_doctor.lint.rules.scheduler_per_microstep import SchedulerPerMicrostep
from ddp_doctor.lint.rules.set_epoch_missing import SetEpochMissing
from ddp_doctor.lint.rules.zero_grad_inside_accum import ZeroGradInsideAccum

ALL_RULES: tuple[Rule, ...] = (
    SamplerMissing(),
    SetEpochMissing(),
    AccumLossUnscaled(),
    ZeroGradInsideAccum(),
    AccumNoSyncMissing(),
    NoSyncAfterForward(),
    SchedulerPerMicrostep(),
    ClipBeforeUnscale(),
    Fp16NoScaler(),
    Rank0OnlyLossLog(),
    FindUnusedTrue(),
    BatchnormUnsynced(),
    FsdpClipWrong(),
    CompileBeforeDdp(),
)
RULES: dict[str, Rule] = {rule.id: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES", "Edit", "Rule", "Violation"]
