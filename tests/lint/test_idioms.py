"""Every framework idiom in lint/idioms.py, linted: its example must give exactly its expected IDs."""

from __future__ import annotations

import textwrap

import pytest

from ddp_doctor.lint.engine import lint_source
from ddp_doctor.lint.idioms import IDIOMS


@pytest.mark.parametrize("idiom", IDIOMS, ids=[f"{i.framework}: {i.spelling}" for i in IDIOMS])
def test_idiom_example_gives_exactly_its_findings(idiom) -> None:
    result = lint_source(textwrap.dedent(idiom.example), "example.py")
    assert not result.diagnostics
    assert sorted(f.id for f in result.findings) == sorted(idiom.expect)
