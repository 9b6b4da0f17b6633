"""Rules declare the project facts they read; the index computes only the selected rules' facts."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from ddp_doctor.lint.engine import lint_paths
from ddp_doctor.lint.project import FACTS, ProjectIndex
from ddp_doctor.lint.rules import ALL_RULES, Rule
from tests.lint.project_facts import assert_rules_alone_agree

CORPUS = Path(__file__).parent / "corpus"


def test_every_declared_fact_exists_and_every_fact_has_a_reader() -> None:
    declared = {fact for rule in ALL_RULES for fact in rule.project_facts}
    assert declared <= set(FACTS), declared - set(FACTS)
    assert declared == set(FACTS), f"computed for no rule: {set(FACTS) - declared}"


def _reads(module: str, names: set[str], seen: set[tuple[str, str]]) -> set[str]:
    """Attribute names read by ``names`` (functions, classes) of ``module`` and by the lint
    functions and classes they use, followed across ddp_doctor.lint modules (not the index's own)."""
    tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    top = {
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    imported = {
        alias.asname or alias.name: (node.module, alias.name)
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    attrs: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if (module, name) in seen:
            continue
        seen.add((module, name))
        if name in imported:
            source, original = imported[name]
            if source.startswith("ddp_doctor.lint") and source != "ddp_doctor.lint.project":
                attrs |= _reads(source, {original}, seen)
            continue
        for node in ast.walk(top[name]) if name in top else ():
            if isinstance(node, ast.Attribute):
                attrs.add(node.attr)
            elif isinstance(node, ast.Name) and (node.id in top or node.id in imported):
                todo.append(node.id)
    return attrs


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.id)
def test_a_rule_declares_every_fact_its_code_reads(rule: Rule) -> None:
    read = _reads(type(rule).__module__, {type(rule).__name__}, set())
    needs = {fact for fact, names in FACTS.items() if read & set(names)}
    assert needs <= rule.project_facts, f"{rule.id} reads {needs - rule.project_facts} undeclared"


def test_the_index_computes_only_the_facts_asked_for(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "import torch\n\n\ndef build():\n    return torch.nn.BatchNorm2d(4)\n", encoding="utf-8"
    )
    files = [tmp_path / "model.py"]
    assert ProjectIndex.build(tmp_path, files).summaries["model.build"].builds_batchnorm
    assert not ProjectIndex.build(tmp_path, files, frozenset()).summaries["model.build"].builds_batchnorm
    with pytest.raises(ValueError, match="unknown project fact"):
        ProjectIndex.build(tmp_path, files, frozenset({"no-such-fact"}))


def test_each_rule_alone_finds_what_it_finds_among_all_on_the_corpus_as_one_project() -> None:
    result = lint_paths([CORPUS])
    assert result.findings
    assert_rules_alone_agree(CORPUS, result.findings)
