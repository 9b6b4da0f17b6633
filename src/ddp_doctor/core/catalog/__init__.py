"""The catalog: every hypothesis users ask about and every finding ddp-doctor can measure.

This package is the spine of ddp-doctor. Runtime checks, lint rules and experiments all emit
findings whose ``id`` is a key of :data:`FINDINGS`; the report groups them under the
hypotheses of :data:`HYPOTHESES`. IDs are a public contract (see docs/catalog.md): never rename
one, only add.

One module per hypothesis holds its :class:`~ddp_doctor.core.catalog.model.HypothesisSpec`
(``HYPOTHESIS``) and the specs of its findings (``SPECS``); :mod:`.model` defines the types. To
add a finding, add its spec to the module of its hypothesis (and its ID to that ``HYPOTHESIS``);
a new module is one line in each of the two orders below.

Text is kept in English and Chinese side by side so that a renderer can show either.
"""

from __future__ import annotations

from types import ModuleType

from ddp_doctor.core.catalog import (
    accumulation,
    batch_size,
    batchnorm,
    compile,
    data_order,
    ddp_config,
    fsdp,
    gradient_sync,
    loss_logging,
    loss_normalization,
    lr_schedule,
    optimizer,
    precision,
    progress,
    spikes_clipping,
)
from ddp_doctor.core.catalog.model import (
    LANGS,
    FindingSpec,
    HypothesisSpec,
    Lang,
    Severity,
    Text,
    Threshold,
)

__all__ = [
    "FINDINGS",
    "HYPOTHESES",
    "LANGS",
    "NOT_A_CAUSE",
    "UI",
    "FindingSpec",
    "HypothesisSpec",
    "Lang",
    "Severity",
    "Text",
    "Threshold",
    "finding",
    "hypotheses_of",
    "limit",
    "lint_ids",
    "runtime_ids",
    "threshold_sentence",
    "threshold_text",
]

# Catalog order: the order of findings in a report (core/findings.py sort_findings ties) and in
# docs/catalog.md, module by module.
_FINDING_MODULES: tuple[ModuleType, ...] = (
    data_order,
    accumulation,
    loss_normalization,
    loss_logging,
    batch_size,
    lr_schedule,
    spikes_clipping,
    precision,
    optimizer,
    compile,
    ddp_config,
    batchnorm,
    fsdp,
    gradient_sync,
    progress,
)
# The order of the hypotheses (the report's verdicts): the forum thread's guesses as they were listed.
_HYPOTHESIS_MODULES: tuple[ModuleType, ...] = (
    compile,
    accumulation,
    batch_size,
    optimizer,
    data_order,
    loss_logging,
    lr_schedule,
    spikes_clipping,
    precision,
    ddp_config,
    batchnorm,
    loss_normalization,
    gradient_sync,
    progress,
)

_FINDING_LIST: tuple[FindingSpec, ...] = tuple(s for m in _FINDING_MODULES for s in m.SPECS)
FINDINGS: dict[str, FindingSpec] = {spec.id: spec for spec in _FINDING_LIST}

_HYPOTHESIS_LIST: tuple[HypothesisSpec, ...] = tuple(
    m.HYPOTHESIS for m in _HYPOTHESIS_MODULES if m.HYPOTHESIS is not None
)
HYPOTHESES: dict[str, HypothesisSpec] = {spec.id: spec for spec in _HYPOTHESIS_LIST}
# Findings that, when confirmed, are facts about the setup but do not make their hypothesis the
# cause of the instability (the verdict stays `ruled-out`).
NOT_A_CAUSE: frozenset[str] = frozenset(fid for fid, spec in FINDINGS.items() if spec.harmless)


def finding(id: str) -> FindingSpec:
    """The spec of a finding ID; a KeyError names the unknown ID."""
    try:
        return FINDINGS[id]
    except KeyError:
        raise KeyError(f"unknown finding id {id!r}; known ids are listed in docs/catalog.md") from None


def limit(finding_id: str, name: str) -> float:
    """A number of a finding's threshold (the one definition the check and the docs share)."""
    spec = finding(finding_id)
    if spec.threshold is None or name not in spec.threshold.values:
        raise KeyError(f"finding {finding_id!r} has no threshold value {name!r}")
    return spec.threshold.values[name]


def threshold_text(finding_id: str, lang: Lang = "en") -> str:
    """The rule of a finding's threshold with its numbers filled in ("" when it has none)."""
    spec = finding(finding_id)
    return spec.threshold.text(lang) if spec.threshold is not None else ""


def threshold_sentence(finding_id: str) -> Text:
    """The rule of a finding's threshold in both languages, numbers filled in: what a check puts under
    its evidence's ``threshold`` (a :class:`Text`: JSON writes the English, the text report the
    reader's language). A check adds the run's own numbers with ``+ Text(" (here ...)", ...)``."""
    spec = finding(finding_id)
    if spec.threshold is None:
        return Text("", "")
    return Text(spec.threshold.text("en"), spec.threshold.text("zh"))


def runtime_ids() -> tuple[str, ...]:
    return tuple(fid for fid, spec in FINDINGS.items() if spec.runtime)


def lint_ids() -> tuple[str, ...]:
    return tuple(fid for fid, spec in FINDINGS.items() if spec.lint)


def hypotheses_of(finding_id: str) -> tuple[str, ...]:
    return tuple(h.id for h in _HYPOTHESIS_LIST if finding_id in h.findings)


# Words shared by every renderer, in both languages.
UI: dict[str, Text] = {
    "confirmed": Text("confirmed", "已确认"),
    "ruled-out": Text("ruled out", "已排除"),
    "inconclusive": Text("inconclusive", "无定论"),
    "not-measured": Text("not measured", "未测量"),
    "observed": Text("observed (fact)", "已观察（事实）"),
    "error": Text("error", "错误"),
    "warning": Text("warning", "警告"),
    "info": Text("info", "信息"),
    "hypothesis": Text("Hypothesis", "假设"),
    "verdict": Text("Verdict", "结论"),
    "finding": Text("Finding", "发现"),
    "findings": Text("Findings", "发现"),
    "evidence": Text("Evidence", "证据"),
    "fix": Text("Fix", "修复"),
    "summary": Text("Summary", "摘要"),
    "threshold": Text("Threshold", "阈值"),
}
