"""Hostile or unusual lint inputs (issue 10 item 8): never a traceback, never a hang, clear messages."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.lint.engine import lint_paths

runner = CliRunner()

FIND_UNUSED = "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net, find_unused_parameters=True)\n"


def _notebook(cells: object) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize(
    "text",
    [
        _notebook([{"cell_type": "code", "source": 5}]),
        _notebook([{"cell_type": "code", "source": [5, None, {"a": 1}]}]),
        _notebook([{"cell_type": "code", "source": None}]),
        "[" * 100_000 + "]" * 100_000,
        '{"cells": ' + "[" * 50_000 + "]" * 50_000 + "}",
    ],
    ids=["source-int", "source-list-of-junk", "source-null", "deep-list", "deep-cells"],
)
def test_malformed_notebooks_give_a_result_not_a_traceback(tmp_path: Path, text: str) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["lint", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code in (0, 2)
    assert "Traceback" not in result.output


def test_pep263_latin1_file_is_decoded_as_declared(tmp_path: Path) -> None:
    path = tmp_path / "legacy.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIND_UNUSED.encode())
    result = lint_paths([path])
    assert not result.diagnostics
    assert [f.id for f in result.findings] == ["find-unused-true"]


def test_undeclared_non_utf8_is_a_clear_read_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_bytes(b"# caf\xe9\nx = 1\n")
    result = lint_paths([path])
    assert [d.kind for d in result.diagnostics] == ["read-error"]
    assert "utf-8" in result.diagnostics[0].message


def test_fix_keeps_crlf_line_endings_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    source = FIND_UNUSED.replace("\n", "\r\n")
    path.write_bytes(("# -*- coding: latin-1 -*-\r\n# \xe9\r\n" + source).encode("latin-1"))
    result = runner.invoke(app, ["lint", "--fix", str(path)])
    assert result.exit_code == 0, result.output
    raw = path.read_bytes()
    assert b"find_unused_parameters=False" in raw
    assert raw.count(b"\r\n") == raw.count(b"\n") == 4  # every line still CRLF
    assert b"\xe9" in raw  # still latin-1


def test_fix_on_a_crlf_file_that_inserts_a_line_keeps_crlf(tmp_path: Path) -> None:
    source = (
        "import torch\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "net = torch.nn.Sequential(torch.nn.BatchNorm2d(4))\n"
        "model = DDP(net)\n"
    ).replace("\n", "\r\n")
    path = tmp_path / "bn.py"
    path.write_bytes(source.encode())
    runner.invoke(app, ["lint", "--fix", str(path)])
    raw = path.read_bytes()
    assert b"convert_sync_batchnorm" in raw
    assert raw.count(b"\n") == raw.count(b"\r\n")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_fix_on_a_read_only_file_is_a_clear_message_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(FIND_UNUSED, encoding="utf-8")
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    result = runner.invoke(app, ["lint", "--fix", str(path)])
    assert result.exit_code == 2
    assert "read-only" in result.output and "Traceback" not in result.output
    assert path.read_text(encoding="utf-8") == FIND_UNUSED


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_fix_never_writes_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    target.write_text(FIND_UNUSED, encoding="utf-8")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    result = runner.invoke(app, ["lint", "--fix", str(link)])
    assert result.exit_code == 2 and "symbolic link" in result.output
    assert target.read_text(encoding="utf-8") == FIND_UNUSED


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_fifos_are_skipped_in_directories_and_refused_when_named(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text(FIND_UNUSED, encoding="utf-8")
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    os.mkfifo(tmp_path / "pyproject.toml")  # a FIFO config must not block either
    os.mkfifo(tmp_path / ".gitignore")
    result = lint_paths([tmp_path])  # would block forever if the FIFO were opened
    assert result.files == 1 and [f.id for f in result.findings] == ["find-unused-true"]
    named = lint_paths([fifo])
    assert [d.kind for d in named.diagnostics] == ["read-error"]
    assert "not a regular file" in named.diagnostics[0].message


@pytest.mark.parametrize(
    "toml",
    [
        "[tool.ddp-doctor]\nx = " + "[" * 5000 + "]" * 5000 + "\n",  # RecursionError in tomllib
        "tool = 5\n",  # `tool` not a table
    ],
)
def test_hostile_pyproject_is_a_config_problem_not_a_traceback(tmp_path: Path, toml: str) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "train.py").write_text(FIND_UNUSED)
    result = runner.invoke(app, ["lint", str(tmp_path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1, 2) and "Traceback" not in result.output


def test_a_notebook_repeating_the_loop_in_many_cells_is_linted_in_linear_work(
    tmp_path: Path, monkeypatch
) -> None:
    """Found by tests/hostile/: 2000 cells each with a DistributedSampler + DataLoader took
    minutes — set-epoch-missing resolved every DataLoader again for every sampler (quadratic). Counted
    in calls, not seconds: each DataLoader's bound names are resolved once."""
    import ddp_doctor.lint.rules.set_epoch_missing as rule

    calls = {"n": 0}
    real = rule.bound_names

    def counting(ctx, node):
        calls["n"] += 1
        return real(ctx, node)

    monkeypatch.setattr(rule, "bound_names", counting)
    cell = (
        "sampler = DistributedSampler(data)\nloader = DataLoader(data, sampler=sampler)\n"
        "for epoch in range(3):\n    for x in loader:\n        model(x).backward()\n"
    )
    cells = 60
    nb = tmp_path / "many.ipynb"
    nb.write_text(
        _notebook(
            [{"cell_type": "code", "source": "from torch.utils.data import DataLoader, DistributedSampler\n"}]
            + [{"cell_type": "code", "source": cell} for _ in range(cells)]
        )
    )
    result = lint_paths([nb], select=("set-epoch-missing",))
    assert sum(f.id == "set-epoch-missing" for f in result.findings) == cells
    assert calls["n"] <= 3 * cells  # was cells * cells


def test_a_path_that_cannot_be_looked_at_is_exit_2_not_a_traceback(tmp_path: Path, monkeypatch) -> None:
    """Found by tests/hostile/ (run as nobody): a file under a folder we may not enter made
    Path.exists raise PermissionError (Python 3.11). Root enters any folder: simulate EACCES."""
    target = tmp_path / "locked" / "train.py"
    real = Path.exists

    def exists(self: Path, *args: object, **kwargs: object) -> bool:
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", exists)
    result = runner.invoke(app, ["lint", "--fix", str(target)])
    assert result.exit_code == 2, result.output
    assert "cannot access" in result.output and "Permission denied" in result.output
