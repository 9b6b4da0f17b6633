"""Every file the tool writes goes through safe_write: atomic, and a planted symlink is replaced,
never followed; unwritable destinations are clear errors (exit 2 from the CLI)."""

from __future__ import annotations

import stat

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.core.safe_io import OutputError, check_destination, write_text

runner = CliRunner()


def test_a_planted_symlink_is_replaced_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "report.html"
    link.symlink_to(victim)
    write_text(link, "report")
    assert not link.is_symlink() and link.read_text() == "report"
    assert victim.read_text() == "precious"


def test_replacing_keeps_the_mode_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    path.chmod(0o640)
    write_text(path, "new\r\nline")
    assert path.read_bytes() == b"new\r\nline"  # line endings exactly as given
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


@pytest.mark.parametrize("case", ["missing-dir", "is-dir", "read-only"])
def test_unwritable_destinations_are_clear_errors(tmp_path, case):
    target = {"missing-dir": tmp_path / "nope" / "x.json", "is-dir": tmp_path, "read-only": tmp_path / "ro"}[
        case
    ]
    if case == "read-only":
        target.write_text("keep")
        target.chmod(0o444)
    with pytest.raises(OutputError, match="cannot write"):
        check_destination(target)
    with pytest.raises(OutputError):
        write_text(target, "x")


def test_report_output_through_a_symlink_and_into_a_missing_directory(make_run, tmp_path):
    run = make_run()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (run / "report.html").symlink_to(victim)
    res = runner.invoke(app, ["report", str(run), "--format", "html"])
    assert res.exit_code == 0, res.output
    assert victim.read_text() == "precious" and not (run / "report.html").is_symlink()
    res = runner.invoke(
        app, ["report", str(run), "--format", "json", "--output", str(tmp_path / "no" / "r.json")]
    )
    assert res.exit_code == 2 and "does not exist" in res.output
    res = runner.invoke(app, ["report", str(run), "--format", "json", "--output", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.output


def test_plan_output_into_a_missing_directory_exits_2(tmp_path):
    res = runner.invoke(
        app,
        [
            "plan",
            "--model",
            "tiny",
            "--gpus",
            "1",
            "--gpu",
            "a100-80gb",
            "--output",
            str(tmp_path / "x" / "p"),
        ],
    )
    assert res.exit_code == 2 and "does not exist" in res.output


def test_lint_fix_replaces_through_safe_write_and_refuses_read_only(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nmodel = torch.nn.parallel.DistributedDataParallel(m, find_unused_parameters=True)\n"
    )
    script.chmod(0o444)
    res = runner.invoke(app, ["lint", str(script), "--fix"])
    assert res.exit_code == 2 and "read-only" in res.output, res.output
    assert "find_unused_parameters=True" in script.read_text()
