"""Every file ddp-doctor writes goes through safe_write: a symlink planted at the destination is
replaced (or refused), and the file it points to is never touched (issue 10, item 4)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.rundir import records

runner = CliRunner()
PRECIOUS = "keep me"


@pytest.fixture
def plant(tmp_path: Path) -> Callable[[Path], Path]:
    """A symlink at ``where`` pointing to a precious file outside; returns the precious file."""
    n = iter(range(100))

    def make(where: Path) -> Path:
        target = tmp_path / f"precious-{next(n)}.txt"
        target.write_text(PRECIOUS)
        where.parent.mkdir(parents=True, exist_ok=True)
        where.symlink_to(target)
        return target

    return make


def _replaced(link: Path, target: Path) -> None:
    assert target.read_text() == PRECIOUS, "the symlink's target was written through"
    assert not link.is_symlink() and link.stat().st_size > 0


def test_report_html_default_destination_in_the_run_dir(make_run, plant) -> None:
    run = make_run()
    target = plant(run / "report.html")
    assert runner.invoke(app, ["report", str(run), "--format", "html"]).exit_code == 0
    _replaced(run / "report.html", target)


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_report_output(make_run, plant, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"out.{fmt}"
    target = plant(out)
    res = runner.invoke(app, ["report", str(make_run()), "--format", fmt, "--output", str(out)])
    assert res.exit_code == 0, res.output
    _replaced(out, target)


def test_plan_output(plant, tmp_path: Path) -> None:
    out = tmp_path / "plan.txt"
    target = plant(out)
    res = runner.invoke(
        app, ["plan", "--model", "tiny", "--gpus", "2", "--gpu", "a100-80gb", "--output", str(out)]
    )
    assert res.exit_code == 0, res.output
    _replaced(out, target)


def test_verify_and_ablate_output_go_through_write_output(plant, tmp_path: Path) -> None:
    # verify/ablate --output (experiments/command.py) and compare --output call cli_common.write_output
    from ddp_doctor.cli_common import write_output

    out = tmp_path / "verify.json"
    target = plant(out)
    write_output(out, "{}\n")
    _replaced(out, target)


def test_manifest_is_replaced_not_written_through(plant, tmp_path: Path) -> None:
    from ddp_doctor.launch.launcher import write_manifest

    run = tmp_path / "run"
    target = plant(run / records.MANIFEST)
    write_manifest(run, {"schema": records.RUN_SCHEMA})
    _replaced(run / records.MANIFEST, target)
    assert (run / records.MANIFEST).stat().st_mode & 0o077 == 0  # run-dir files stay private


def test_launcher_failure_reports_and_claims_refuse_a_planted_symlink(plant, tmp_path: Path) -> None:
    from ddp_doctor.core.safe_io import create_new

    where = tmp_path / "exits" / "exits-host-1.json"
    target = plant(where)
    with pytest.raises(FileExistsError):
        create_new(where, b"{}")
    assert target.read_text() == PRECIOUS


def test_trainer_launch_log_is_not_written_through(plant, tmp_path: Path) -> None:
    from ddp_doctor.core.safe_io import open_log

    log = tmp_path / "trainer" / "launch.log"
    target = plant(log)
    with open_log(log) as fh:
        fh.write("rank 0 started\n")
    _replaced(log, target)


def test_rank_file_cache_is_replaced_not_written_through(make_run, plant) -> None:
    from ddp_doctor.rundir import rankfile

    run = make_run()
    rank0 = records.rank_file(run, 0)
    cache = rankfile.cache_path(rank0)
    target = plant(cache)
    data, probs = rankfile.parse_rank(rank0, 0)
    assert rankfile.save_cache(rank0, data, probs, rankfile.file_key(rank0))
    _replaced(cache, target)


def test_integration_summary_reports(make_run, plant) -> None:
    from ddp_doctor.integrations.common import summarise

    run = make_run()
    targets = [plant(run / "report.json"), plant(run / "report.html")]
    assert summarise(run)
    for name, target in zip(("report.json", "report.html"), targets):
        _replaced(run / name, target)
    json.loads((run / "report.json").read_text())


def test_demo_compare_html_and_generated_docs_use_the_same_writer() -> None:
    # demo.py (compare.html), gendocs (docs/*.md), trainer/summary.py: one writer (an imported log is
    # read into memory, rundir/sources/logs.py: nothing written)
    import inspect

    from ddp_doctor import demo, gendocs
    from ddp_doctor.trainer import summary

    for module in (demo, gendocs, summary):
        src = inspect.getsource(module)
        assert "ddp_doctor.core.safe_io" in src, module
        assert not re.search(r"[\w)\]]\.(write_text|write_bytes)\(|open\([^)]*[\"']w", src), module


def test_appended_record_streams_refuse_a_planted_symlink(plant, tmp_path: Path) -> None:
    from ddp_doctor.core.safe_io import open_append

    stream = tmp_path / "trainer" / "metrics.jsonl"
    target = plant(stream)
    with pytest.raises(OSError):
        open_append(stream)
    assert target.read_text() == PRECIOUS
    fresh = tmp_path / "trainer" / "fresh.jsonl"
    for line in ("a\n", "b\n"):
        with open_append(fresh) as fh:
            fh.write(line)
    assert fresh.read_text() == "a\nb\n" and fresh.stat().st_mode & 0o077 == 0
