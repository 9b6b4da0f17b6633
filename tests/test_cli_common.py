"""One CLI convention: exit codes defined once, --format/--lang as choices everywhere, errors escaped."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.cli_common import ExitCode

runner = CliRunner()


def test_exit_codes_are_the_public_ones():
    assert (ExitCode.OK, ExitCode.FINDINGS, ExitCode.USAGE) == (0, 1, 2)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", ".", "--format", "pdf"],
        ["report", ".", "--lang", "fr"],
        ["lint", ".", "--format", "xml"],
        ["lint", ".", "--lang", "fr"],
        ["verify", "--format", "yaml"],
        ["ablate", "--format", "yaml", "--", "python", "x.py"],
        ["plan", "--model", "tiny", "--gpus", "1", "--format", "pdf"],
        ["run", "--level", "max", "--", "python", "x.py"],
        ["compare", ".", ".", "--format", "pdf"],
        ["compare", ".", ".", "--lang", "fr"],
    ],
)
def test_a_value_outside_the_choices_is_a_usage_error_that_lists_them(argv):
    res = runner.invoke(app, argv)
    assert res.exit_code == ExitCode.USAGE, res.output
    assert "Invalid value" in res.output


def test_every_command_is_registered_once():
    names = [c.name for c in app.registered_commands]
    assert sorted(names) == sorted(set(names))
    assert {"run", "report", "lint", "demo", "train", "verify", "ablate", "plan", "compare"} <= set(names)
