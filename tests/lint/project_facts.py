"""Shared by the multi-file lint tests (tests/lint/test_project*.py): write a small project, lint it, and
check that a rule run alone finds what it finds among all rules.

Alone, project mode builds an index with only the facts that rule declares (``Rule.project_facts``),
so a rule that reads a fact it does not declare finds less here.
"""

from __future__ import annotations

import textwrap
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


def write_files(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _checked(root: Path, project: bool) -> list[Finding]:
    result = lint_paths([root], project=project)
    assert not result.diagnostics
    # each rule run alone (its project index holds only the facts that rule declares) finds the same
    assert_rules_alone_agree(root, result.findings, project)
    return result.findings


def found(root: Path, project: bool = True) -> set[tuple[str, str]]:
    """(rule, path relative to ROOT) of each finding of ROOT."""
    return {(f.id, Path(f.path or "").relative_to(root).as_posix()) for f in _checked(root, project)}


def found_gated(root: Path, project: bool = True) -> set[tuple[str, str, str | None]]:
    """(rule, path relative to ROOT, the flag that gates it) of each finding of ROOT."""
    return {
        (f.id, Path(f.path or "").relative_to(root).as_posix(), f.evidence.get("gated_by"))
        for f in _checked(root, project)
    }
