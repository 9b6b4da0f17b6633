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


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "—"


def markdown_table() -> str:
    """docs/lint.md's rule table: one row per rule (in ``ALL_RULES`` order), severity from the catalog."""
    lines = [
        "| id | severity | flagged when | correct idioms that are NOT flagged | autofix |",
        "|---|---|---|---|---|",
    ]
    for rule in ALL_RULES:
        cells = (rule.id, rule.spec.severity, rule.flagged, rule.not_flagged, rule.autofix)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def corpus_sentence() -> str:
    """docs/lint.md's sentence on the corpus test, with the rule counts."""
    n = len(ALL_RULES)
    return (
        "`tests/lint/corpus/<rule-id>/` holds bad and good snippets in different styles (functions,\n"
        f"classes, helpers, aliases, notebooks-style flat code). Every snippet is linted with all {n}\n"
        "rules and its findings must equal exactly the lines marked `# expect: ID` — so each good\n"
        f"snippet is also a precision test for the {n - 1} other rules.\n"
    )


__all__ = ["ALL_RULES", "RULES", "Edit", "Rule", "Violation", "corpus_sentence", "markdown_table"]
