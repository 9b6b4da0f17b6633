"""The shape every lint rule shares: an ID from the catalog, a check, and optional autofix edits.

One class per rule (TorchFix style). Severity and fix text come from the catalog
(``ddp_doctor.core.catalog.FINDINGS``) in English and Chinese, so a rule only says *where* and *why
here*; the edits of an autofix travel with the violation.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ddp_doctor.core.catalog import FINDINGS, FindingSpec, Severity, Text
from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.loops import LoopFacts


@dataclass(frozen=True)
class Edit:
    """Replace source from (line, col) to (end_line, end_col) — 1-based lines, character columns."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass
class Violation:
    rule_id: str
    line: int
    end_line: int
    message: Text
    evidence: dict[str, Any] = field(default_factory=dict)
    edits: tuple[Edit, ...] = ()
    # Config-gated: the bug exists only when a flag has a given value (``--dtype float16``).
    gated_by: str | None = None


class Rule:
    """Base class: subclasses set ``id`` and implement ``check``."""

    id: ClassVar[str]
    # docs/lint.md's rule table is generated from these (``python -m ddp_doctor.gendocs --write``):
    # when the rule flags, the correct idioms it leaves alone, and what its autofix does ("" = none).
    flagged: ClassVar[str]
    not_flagged: ClassVar[str]
    autofix: ClassVar[str] = ""
    # Words the file must contain for the rule to possibly fire: every group needs one of its
    # words. Checked on the identifier set (``applies``) and, before any analysis, on the raw
    # text (``may_apply``): an identifier always appears in the text, so skipping is safe.
    # The engine checks both before it calls ``check``, so a rule never repeats this test.
    required: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # In project mode a fact may come from another file (DDP applied by a helper, backward in a
    # loss-scaler object): the rule then declares the looser words it needs in this file.
    required_in_project: ClassVar[tuple[tuple[str, ...], ...] | None] = None
    # The project-index facts this rule reads beyond the shared ones (names of lint.project.FACTS):
    # project mode computes only the selected rules' facts.
    project_facts: ClassVar[frozenset[str]] = frozenset()

    def _groups(self, project: Any = None) -> tuple[tuple[str, ...], ...]:
        if project is None or self.required_in_project is None:
            return self.required
        groups = self.required_in_project
        extra = self.project_words(project)
        if extra and groups:
            groups = ((*groups[0], *extra), *groups[1:])
        return groups

    def project_words(self, project: Any) -> tuple[str, ...]:
        """Names defined by this project that can stand for the first required group (a DDP helper's
        name for the DDP wrap): added to ``required_in_project``'s first group."""
        return ()

    def applies(self, ctx: FileContext) -> bool:
        return all(ctx.mentions(*group) for group in self._groups(ctx.project))

    def may_apply(self, source: str, project: Any = None) -> bool:
        return all(any(word in source for word in group) for group in self._groups(project))

    @property
    def spec(self) -> FindingSpec:
        return FINDINGS[self.id]

    @property
    def severity(self) -> Severity:
        return self.spec.severity

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        raise NotImplementedError

    def violation(
        self,
        node: ast.AST,
        message: Text,
        edits: tuple[Edit, ...] = (),
        gated_by: str | None = None,
        **evidence: Any,
    ) -> Violation:
        line = getattr(node, "lineno", 1)
        return Violation(
            self.id,
            line,
            getattr(node, "end_lineno", None) or line,
            message,
            evidence,
            edits,
            gated_by,
        )


def char_col(ctx: FileContext, line: int, byte_col: int) -> int:
    """ast columns are UTF-8 byte offsets; edits use character offsets."""
    text = ctx.lines[line - 1] if 0 < line <= len(ctx.lines) else ""
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def replace_node(ctx: FileContext, node: ast.expr | ast.stmt, text: str) -> Edit:
    return Edit(
        node.lineno,
        char_col(ctx, node.lineno, node.col_offset),
        node.end_lineno or node.lineno,
        char_col(ctx, node.end_lineno or node.lineno, node.end_col_offset or 0),
        text,
    )


def insert_line_before(ctx: FileContext, stmt: ast.stmt, text: str) -> Edit:
    """Insert ``text`` as a new line above ``stmt`` with the statement's indentation."""
    return Edit(stmt.lineno, 0, stmt.lineno, 0, f"{ctx.indent_of(stmt.lineno)}{text}\n")


def statement_of(ctx: FileContext, node: ast.AST) -> ast.stmt | None:
    cur: ast.AST | None = node
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = ctx.parents.get(cur)
    return cur


def starts_own_line(ctx: FileContext, stmt: ast.stmt) -> bool:
    """True when the statement is the first thing on its line (not after `;` or `if x:`)."""
    text = ctx.lines[stmt.lineno - 1] if 0 < stmt.lineno <= len(ctx.lines) else ""
    return char_col(ctx, stmt.lineno, stmt.col_offset) == len(text) - len(text.lstrip())
