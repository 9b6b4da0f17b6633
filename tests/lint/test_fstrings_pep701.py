"""Code written for Python 3.12's f-strings (PEP 701) is linted on older Pythons too.

Since 3.12 a replacement field may reuse the f-string's own quote (``f"{cfg["lr"]}"``); before it
that is a syntax error, so a 3.11 lint used to report "cannot parse" and read nothing of the file
(2 of holdout-24's 42 scripts: remove-background-diffusion, cf-dense-contrastive). ``parse_python``
requotes such inner strings, keeping every line and column, and parses the copy.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ddp_doctor.lint.engine import lint_paths
from ddp_doctor.lint.source import _Unfixable, parse_python, requote_fstrings


@pytest.mark.parametrize(
    ("source", "requoted"),
    [
        ('f"{cfg["lr"]}"', "f\"{cfg['lr']}\""),
        ("f'{cfg['lr']:>{w}}'", "f'{cfg[\"lr\"]:>{w}}'"),
        ('f"{a} {b["k"]!r} {{lit}}"', "f\"{a} {b['k']!r} {{lit}}\""),
        ('f"{f"{y}"}"', "f\"{f'{y}'}\""),
        ('f"{" ".join(["a", "b"])}"', "f\"{' '.join(['a', 'b'])}\""),
        # already valid before 3.12: left as written
        ('f"""{d["a"]}"""', 'f"""{d["a"]}"""'),
        ('f"{d[\'a\']}"  # a "comment"', 'f"{d[\'a\']}"  # a "comment"'),
        ('"plain \\" {x}" + f"{y}"', '"plain \\" {x}" + f"{y}"'),
    ],
)
def test_inner_strings_reusing_the_outer_quote_are_requoted_in_place(source: str, requoted: str) -> None:
    assert requote_fstrings(source) == requoted
    assert len(requote_fstrings(source)) == len(source)  # every column stays where it was
    ast.parse(requoted)


@pytest.mark.parametrize(
    "source",
    [
        'f"{d["it\'s"]}"',  # the other quote is in the inner text: no pre-3.12 spelling
        'f"{d["a"]',  # unterminated
        'f"{f"{f"{x}"}"}"',  # three levels need three quote kinds
        "f'{" * 40 + "x" + "}'" * 40,  # nested deeper than any real code: bounded, no RecursionError
    ],
)
def test_forms_with_no_older_spelling_are_refused(source: str) -> None:
    with pytest.raises(_Unfixable):
        requote_fstrings(source)


def test_a_file_that_cannot_be_requoted_is_still_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text('x = f"{d["it\'s"]}"\n')
    result = lint_paths([path])
    assert [d.kind for d in result.diagnostics] == ["parse-error"]


def test_a_pep701_training_script_is_linted_with_its_lines(tmp_path: Path) -> None:
    """The finding keeps its line: the requoted copy has the same layout."""
    path = tmp_path / "train.py"
    path.write_text(
        "import torch\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torch.nn.Linear(2, 2), find_unused_parameters=True)\n"
        'print(f"config {cfg["lr"]} {cfg["wd"]}")\n'
    )
    parse_python(path.read_text())  # any Python this project supports
    result = lint_paths([path], select=("find-unused-true",))
    assert not result.diagnostics
    assert [(f.id, f.line) for f in result.findings] == [("find-unused-true", 3)]
