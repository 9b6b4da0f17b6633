"""Names from the user's run never reach the terminal as raw control sequences."""

from __future__ import annotations

from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.terminal import safe

runner = CliRunner()
ESC_TITLE = "\x1b]0;pwned\x07"


def test_control_characters_become_visible_escapes():
    assert safe(f"layer{ESC_TITLE}.weight") == "layer\\x1b]0;pwned\\x07.weight"
    assert safe("a\u202eb\x9bc\x7f") == "a\\u202eb\\x9bc\\x7f"
    assert safe("two\nlines\tok") == "two\nlines\tok"
    assert safe("two\nlines", oneline=True) == "two\\x0alines"
    assert safe("日本語 and ≥") == "日本語 and ≥"


def test_lint_output_escapes_a_hostile_path(tmp_path):
    script = tmp_path / f"bad{ESC_TITLE}.py"
    script.write_text(
        "import torch\nm = torch.nn.parallel.DistributedDataParallel(m, find_unused_parameters=True)\n"
    )
    res = runner.invoke(app, ["lint", str(script)])
    assert "\x1b" not in res.output and "\\x1b" in res.output


def test_cli_errors_escape_the_name_they_quote(tmp_path):
    res = runner.invoke(app, ["report", str(tmp_path / f"run{ESC_TITLE}")])
    assert res.exit_code == 2
    assert "\x1b" not in res.output


def test_text_report_escapes_names_from_the_run(make_run):
    run = make_run()
    hostile = run.parent / f"r{ESC_TITLE}"
    run.rename(hostile)
    res = runner.invoke(app, ["report", str(hostile)])
    assert res.exit_code == 0, res.output
    assert "\x1b]0;" not in res.output
