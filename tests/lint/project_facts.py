"""Shared check: a rule run alone finds what it finds among all rules (tests/lint/test_project*.py).

Alone, project mode builds an index with only the facts that rule declares (``Rule.project_facts``),
so a rule that reads a fact it does not declare finds less here.
"""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.core.findings import Finding
from ddp_doctor.lint.engine import lint_paths
from ddp_doctor.lint.rules import RULES


def _key(f: Finding) -> tuple[str, str | None, int | None, str, str | None]:
    return (f.id, f.path, f.line, f.summary.en, f.evidence.get("gated_by"))


def assert_rules_alone_agree(root: Path, findings: list[Finding], project: bool = True) -> None:
    every = sorted(map(_key, findings), key=repr)
    for rule_id in RULES:
        alone = sorted(map(_key, lint_paths([root], select=(rule_id,), project=project).findings), key=repr)
        assert alone == [k for k in every if k[0] == rule_id], rule_id
