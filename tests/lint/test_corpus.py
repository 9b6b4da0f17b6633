"""Every snippet in corpus/<rule-id>/ is linted with ALL rules; its findings must be exactly the
lines marked ``# expect: ID[, ID]``. bad_* snippets mark at least one finding of their folder's
rule, good_* snippets mark none of it — so the corpus checks recall and precision at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddp_doctor.core.catalog import lint_ids
from ddp_doctor.lint.engine import lint_file

CORPUS = Path(__file__).parent / "corpus"
EXPECT = re.compile(r"#\s*expect:\s*([\w\-, ]+)")
SNIPPETS = sorted(CORPUS.glob("*/*.py"))
MIN_PER_KIND = 3  # the issue: at least three bad and three good snippets per rule


def expected(path: Path) -> set[tuple[str, int]]:
    out = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = EXPECT.search(line)
        if m:
            out |= {(i.strip(), n) for i in m.group(1).split(",") if i.strip()}
    return out


@pytest.mark.parametrize("path", SNIPPETS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_snippet_findings_are_exactly_the_marked_lines(path: Path) -> None:
    result = lint_file(path)
    assert result.diagnostics == []
    got = {(f.id, f.line) for f in result.findings}
    assert got == expected(path)
    rule = path.parent.name
    marked = {i for i, _ in expected(path)}
    if path.name.startswith("bad_"):
        assert rule in marked
    else:
        assert rule not in marked


def test_every_lint_rule_has_three_bad_and_three_good_snippets() -> None:
    for rule in lint_ids():
        folder = CORPUS / rule
        assert len(list(folder.glob("bad_*.py"))) >= MIN_PER_KIND, rule
        assert len(list(folder.glob("good_*.py"))) >= MIN_PER_KIND, rule
