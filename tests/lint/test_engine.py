"""Engine behaviour: suppression, notebooks, unreadable files, config, excludes, no execution."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddp_doctor.lint.engine import apply_edits, lint_paths, lint_source, resolve_ids
from ddp_doctor.lint.rules import Edit

FIND_UNUSED = textwrap.dedent("""\
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(net, find_unused_parameters=True){comment}
""")


def _ids(source: str) -> list[str]:
    return [f.id for f in lint_source(source, "x.py").findings]


@pytest.mark.parametrize(
    "comment, silenced",
    [
        ("  # ddp-doctor: ignore[find-unused-true]", True),
        ("  # ddp-doctor: ignore[sampler-missing, find-unused-true]", True),
        ("  # ddp-doctor: ignore", True),
        ("  # ddp-doctor: ignore[sampler-missing]", False),
        ("  # some other comment", False),
    ],
)
def test_inline_ignore_silences_only_the_named_ids(comment: str, silenced: bool) -> None:
    assert _ids(FIND_UNUSED.format(comment=comment)) == ([] if silenced else ["find-unused-true"])


def test_raw_text_without_imports_is_not_matched() -> None:
    # `DDP` is not imported from torch here, so nothing resolves to DistributedDataParallel.
    assert _ids("model = DDP(net, find_unused_parameters=True)\n") == []


def _notebook(cells: list[tuple[str, str]]) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "source": src.splitlines(keepends=True), "metadata": {}}
                for kind, src in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def test_notebook_findings_report_cell_and_line(tmp_path: Path) -> None:
    nb = tmp_path / "train.ipynb"
    nb.write_text(
        _notebook(
            [
                ("markdown", "# Training\nsome text"),
                (
                    "code",
                    "%matplotlib inline\n!nvidia-smi\nfrom torch.nn.parallel import DistributedDataParallel as DDP",
                ),
                ("code", "%%bash\necho not python ( at all"),
                ("code", "x = 1\nmodel = DDP(net, find_unused_parameters=True)"),
            ]
        ),
        encoding="utf-8",
    )
    result = lint_paths([nb])
    assert result.diagnostics == []
    [finding] = result.findings
    assert (finding.id, finding.evidence["cell"], finding.line) == ("find-unused-true", 4, 2)


def test_notebook_syntax_error_names_the_cell(tmp_path: Path) -> None:
    nb = tmp_path / "broken.ipynb"
    nb.write_text(_notebook([("code", "x = 1"), ("code", "def f(:\n    pass")]), encoding="utf-8")
    [diag] = lint_paths([nb]).diagnostics
    assert diag.kind == "parse-error" and "cell 2" in diag.message


def test_unparsable_and_undecodable_files_are_reported_and_the_run_continues(tmp_path: Path) -> None:
    (tmp_path / "a_broken.py").write_text("def f(:\n", encoding="utf-8")
    (tmp_path / "b_binary.py").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "c_bad_nb.ipynb").write_text("{not json", encoding="utf-8")
    (tmp_path / "d_ok.py").write_text(FIND_UNUSED.format(comment=""), encoding="utf-8")
    result = lint_paths([tmp_path])
    assert sorted(Path(d.path).name for d in result.diagnostics) == [
        "a_broken.py",
        "b_binary.py",
        "c_bad_nb.ipynb",
    ]
    assert next(d for d in result.diagnostics if d.path.endswith("a_broken.py")).line == 1
    assert [f.id for f in result.findings] == ["find-unused-true"]
    assert result.files == 4


def test_linted_code_is_never_imported_or_executed(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    (tmp_path / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\nimport no_such_module_xyz\nraise SystemExit(3)\n",
        encoding="utf-8",
    )
    result = lint_paths([tmp_path])
    assert result.diagnostics == [] and not marker.exists()


def test_pyproject_config_selects_ignores_and_excludes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ddp-doctor]\nignore = ["find-unused-true"]\nexclude = ["generated/", "legacy_*.py"]\n',
        encoding="utf-8",
    )
    bad = FIND_UNUSED.format(comment="") + "import torch\nm2 = DDP(torch.compile(net))\n"
    for rel in ("train.py", "generated/gen.py", "legacy_train.py", "sub/legacy_old.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(bad, encoding="utf-8")
    result = lint_paths([tmp_path])
    assert result.files == 1
    assert [f.id for f in result.findings] == ["compile-before-ddp"]
    # the same with a relative path argument, as `ddp-doctor lint .` gives
    monkeypatch.chdir(tmp_path)
    assert [(f.id, f.path) for f in lint_paths([Path(".")]).findings] == [("compile-before-ddp", "train.py")]
    # the command line's --select replaces the config's, its --ignore adds to it
    assert lint_paths([tmp_path], select=("find-unused-true",), ignore=()).findings == []
    assert lint_paths([tmp_path], ignore=("compile-before-ddp",)).findings == []


def test_gitignore_and_default_excludes_are_honoured(tmp_path: Path) -> None:
    bad = FIND_UNUSED.format(comment="")
    (tmp_path / ".gitignore").write_text("out/\n*.gen.py\n!keep.gen.py\n", encoding="utf-8")
    for rel in ("a.py", "out/b.py", "x.gen.py", "keep.gen.py", ".venv/lib/c.py", "pkg/__pycache__/d.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(bad, encoding="utf-8")
    result = lint_paths([tmp_path])
    assert sorted(Path(f.path).name for f in result.findings) == ["a.py", "keep.gen.py"]


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_gitignore_hides_only_files_git_does_not_track(tmp_path: Path) -> None:
    """git's rule: a script committed despite a matching pattern (microgpt ships the
    train_distributed.py its .gitignore lists) is read; an untracked match stays hidden."""
    bad = FIND_UNUSED.format(comment="")
    (tmp_path / ".gitignore").write_text("train*.py\nout/\n", encoding="utf-8")
    for rel in ("train.py", "out/b.py", "train_mine.py", "out/scratch.py", "a.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(bad, encoding="utf-8")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-f", "train.py", "out/b.py", "a.py")
    # a hostile repository config must not run anything while lint lists the tracked files
    _git(tmp_path, "config", "core.fsmonitor", f"touch {tmp_path / 'ran'}; false")
    found = sorted(Path(f.path).relative_to(tmp_path).as_posix() for f in lint_paths([tmp_path]).findings)
    assert found == ["a.py", "out/b.py", "train.py"]
    assert not (tmp_path / "ran").exists()


def test_no_respect_gitignore_reads_every_file_but_default_excludes(tmp_path: Path) -> None:
    bad = FIND_UNUSED.format(comment="")
    (tmp_path / ".gitignore").write_text("train*.py\n", encoding="utf-8")
    for rel in ("train.py", "a.py", ".venv/lib/c.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(bad, encoding="utf-8")
    assert [Path(f.path).name for f in lint_paths([tmp_path]).findings] == ["a.py"]
    names = sorted(Path(f.path).name for f in lint_paths([tmp_path], respect_gitignore=False).findings)
    assert names == ["a.py", "train.py"]


def test_unknown_ids_are_rejected() -> None:
    with pytest.raises(ValueError, match="no-such-rule"):
        resolve_ids(("no-such-rule",), ())
    with pytest.raises(ValueError, match="nonfinite"):  # a runtime-only ID is not a lint rule
        resolve_ids(None, ("nonfinite",))


def test_apply_edits_keeps_text_outside_edits_and_handles_insertions() -> None:
    source = "a = 1\nb = f(True)\n"
    new, applied = apply_edits(source, [Edit(2, 6, 2, 10, "False"), Edit(2, 0, 2, 0, "c = 2\n")])
    assert (new, applied) == ("a = 1\nc = 2\nb = f(False)\n", 2)


def test_lint_package_does_not_import_torch() -> None:
    code = (
        "import sys, ddp_doctor.lint.engine, ddp_doctor.lint.output, ddp_doctor.lint.command;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
