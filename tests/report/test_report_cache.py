"""The report cache (report/cache.py): a warm report is the cold one, and nothing stale is ever served.

Each test makes the cache apply to a small synthetic run (CACHE_MIN_BYTES patched to 0) and counts
the diagnoses: a hit is a report printed without one. Invalidation: a rank file that grew (a run in
progress), a rank file replaced by the same bytes (another inode), a file added; a run that changed
while it was read is not cached; a damaged entry is a miss with a note; a symlink in the cache's
place is never written through.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fixtures.synth_run import SynthSpec, write_run
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.report import cache, load
from ddp_doctor.rundir import records

runner = CliRunner()


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cache, "CACHE_MIN_BYTES", 0)
    return write_run(tmp_path / "run", SynthSpec(world_size=2, steps=120, faults=("loss-spike",)))


@pytest.fixture
def diagnoses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The run directories diagnosed (a cache hit adds none)."""
    seen: list[Path] = []
    real = load.diagnose_path

    def counted(path: Any, options: Any = None) -> Any:
        seen.append(Path(path))
        return real(path, options)

    monkeypatch.setattr(load, "diagnose_path", counted)
    return seen


def _report(run: Path, *args: str) -> Any:
    got = runner.invoke(app, ["report", str(run), *args])
    assert got.exit_code in (0, 1), got.output
    return got


def _entries(run: Path) -> list[Path]:
    return sorted((run / records.CACHE_DIR).glob("report-*.json"))


@pytest.mark.parametrize(
    "args", [["--format", "json"], ["--format", "text"], []], ids=["json", "text-file", "console"]
)
def test_a_warm_report_is_the_cold_one_without_reading_the_run(
    run: Path, diagnoses: list[Path], args: list[str], tmp_path: Path
) -> None:
    if args and args[1] == "text":
        args = [*args, "-o", str(tmp_path / "r.txt")]
    cold = _report(run, *args)
    cold_file = (tmp_path / "r.txt").read_text() if "-o" in args else None
    assert len(diagnoses) == 1 and len(_entries(run)) == 1
    warm = _report(run, *args)
    assert len(diagnoses) == 1  # served from the cache
    assert warm.stdout == cold.stdout
    if cold_file is not None:
        assert (tmp_path / "r.txt").read_text() == cold_file
    assert len(cold_file or cold.stdout) > 1000  # the report itself, not a message


def test_options_have_their_own_entries(run: Path, diagnoses: list[Path]) -> None:
    en = _report(run, "--format", "json")
    zh = _report(run, "--format", "json", "--lang", "zh")
    assert len(diagnoses) == 2 and len(_entries(run)) == 2
    assert json.loads(en.stdout)["lang"] == "en" and json.loads(zh.stdout)["lang"] == "zh"
    assert _report(run, "--format", "json", "--lang", "zh").stdout == zh.stdout and len(diagnoses) == 2


def test_fail_on_from_the_cache_exits_as_the_fresh_report(run: Path, diagnoses: list[Path]) -> None:
    cold = runner.invoke(app, ["report", str(run), "--format", "json", "--fail-on", "warning"])
    warm = runner.invoke(app, ["report", str(run), "--format", "json", "--fail-on", "warning"])
    assert len(diagnoses) == 1
    assert cold.exit_code == warm.exit_code == 1  # a warning or worse is confirmed
    assert cold.stderr == warm.stderr and "--fail-on warning" in warm.stderr


def test_a_growing_rank_file_is_read_again(run: Path, diagnoses: list[Path]) -> None:
    """A run in progress: the probe appended a line (here a cut one) since the last report."""
    cold = _report(run, "--format", "json")
    with open(records.rank_file(run, 1), "ab") as fh:
        fh.write(b'{"kind":"step","step":120,"ti')
    warm = _report(run, "--format", "json")
    assert len(diagnoses) == 2
    assert warm.stdout != cold.stdout and "truncated" in warm.stdout
    _report(run, "--format", "json")
    assert len(diagnoses) == 2  # unchanged since: cached again


def test_a_replaced_rank_file_is_read_again(run: Path, diagnoses: list[Path]) -> None:
    """The same bytes, the same mtime, under another inode: still another file."""
    _report(run, "--format", "json")
    path = records.rank_file(run, 0)
    st = os.stat(path)
    copy = path.with_suffix(".new")
    copy.write_bytes(path.read_bytes())  # written while the old one exists: another inode
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    copy.replace(path)
    _report(run, "--format", "json")
    assert len(diagnoses) == 2


def test_a_new_file_in_the_run_is_read_again(run: Path, diagnoses: list[Path]) -> None:
    _report(run, "--format", "json")
    (run / records.TRAINER_DIR).mkdir(exist_ok=True)
    records.trainer_metrics_path(run).write_text('{"step": 1, "loss": 2.0}\n')
    _report(run, "--format", "json")
    assert len(diagnoses) == 2


def test_the_report_s_own_outputs_do_not_invalidate(run: Path, diagnoses: list[Path]) -> None:
    out = run / "r.json"
    _report(run, "--format", "json", "-o", str(out))
    _report(run, "--format", "html")  # RUN/report.html
    _report(run, "--format", "json", "-o", str(out))
    assert len(diagnoses) == 2  # json, html; then json from the cache
    assert json.loads(out.read_text())["schema"].startswith("ddp-doctor.report")


def test_a_run_that_changes_while_it_is_read_is_not_cached(
    run: Path, monkeypatch: pytest.MonkeyPatch, diagnoses: list[Path]
) -> None:
    real = load.diagnose_path

    def writing(path: Any, options: Any = None) -> Any:
        out = real(path, options)
        with open(records.rank_file(run, 0), "ab") as fh:  # the probe writes during the report
            fh.write(b"\n")
        return out

    monkeypatch.setattr(load, "diagnose_path", writing)
    _report(run, "--format", "json")
    assert _entries(run) == []


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{not json",
        b"[1, 2]",
        b'{"version": 1}',
        b'{"version": 1, "fingerprint": 3, "output": "", "confirmed": []}',
        b'{"version": 1, "fingerprint": "x", "output": "", "confirmed": [["a", "fatal"]]}',
        b"\xff\xfe",
    ],
)
def test_a_damaged_entry_is_read_again_with_a_note(run: Path, diagnoses: list[Path], damage: bytes) -> None:
    cold = _report(run, "--format", "json")
    (entry,) = _entries(run)
    entry.write_bytes(damage)
    warm = _report(run, "--format", "json")
    assert len(diagnoses) == 2 and warm.stdout == cold.stdout
    assert "report cache" in warm.stderr and "read again" in warm.stderr
    _report(run, "--format", "json")  # the entry was rewritten: a hit, no note
    assert len(diagnoses) == 2


def test_a_stale_fingerprint_in_an_entry_is_a_quiet_miss(run: Path, diagnoses: list[Path]) -> None:
    _report(run, "--format", "json")
    (entry,) = _entries(run)
    body = json.loads(entry.read_text())
    entry.write_text(json.dumps(body | {"fingerprint": "0" * 32, "output": "OLD REPORT\n"}))
    warm = _report(run, "--format", "json")
    assert len(diagnoses) == 2 and "OLD REPORT" not in warm.stdout and "report cache" not in warm.stderr


def test_a_symlink_in_the_entry_s_place_is_replaced_not_followed(
    run: Path, diagnoses: list[Path], tmp_path: Path
) -> None:
    _report(run, "--format", "json")
    (entry,) = _entries(run)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    entry.unlink()
    entry.symlink_to(victim)
    warm = _report(run, "--format", "json")
    assert len(diagnoses) == 2 and "report cache" in warm.stderr
    assert victim.read_text() == "keep me"
    assert not entry.is_symlink() and json.loads(entry.read_text())["version"] == cache.VERSION


def test_a_cache_directory_that_is_a_symlink_is_not_written(
    run: Path, diagnoses: list[Path], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / records.CACHE_DIR).symlink_to(elsewhere, target_is_directory=True)
    _report(run, "--format", "json")
    _report(run, "--format", "json")
    assert list(elsewhere.iterdir()) == [] and len(diagnoses) == 2


def test_small_runs_and_imported_options_are_not_cached(
    run: Path, diagnoses: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "CACHE_MIN_BYTES", 2**40)
    _report(run, "--format", "json")
    _report(run, "--format", "json")
    assert len(diagnoses) == 2 and _entries(run) == []


# --- the fast path (report/warm.py): a hit served before typer is built -----------------------------


def test_the_fast_path_defaults_are_the_command_s() -> None:
    import inspect

    from ddp_doctor.report import command, warm

    params = inspect.signature(command.report).parameters
    defaults = {
        "fmt": params["fmt_choice"].default.default.value,
        "output": params["output"].default.default,
        "lang": params["lang_choice"].default.default.value,
        "rollups": params["rollups"].default.default,
        "steps": params["steps"].default.default or [],
    }
    assert defaults == warm.DEFAULTS


@pytest.mark.parametrize(
    ("argv", "ok"),
    [
        (["report", "R"], True),
        (["report", "R", "--format=json", "-o", "x", "--lang", "zh", "--steps", "1-2", "--steps", "5"], True),
        (["report", "R", "-f", "html"], True),
        (["report", "R", "--fail-on", "error"], False),
        (["report", "R", "--export", "wandb"], False),
        (["report", "R", "--help"], False),
        (["report", "R", "-o=x"], False),
        (["report", "R", "S"], False),
        (["report", "R", "--format"], False),
        (["report"], False),
        (["lint", "R"], False),
        ([], False),
    ],
)
def test_the_fast_path_reads_only_what_it_serves(argv: list[str], ok: bool) -> None:
    from ddp_doctor.report import warm

    got = warm.parse(argv)
    assert (got is not None) == ok
    if "--lang" in argv:
        assert got == {
            "run": "R",
            "fmt": "json",
            "output": "x",
            "lang": "zh",
            "rollups": "auto",
            "steps": ["1-2", "5"],
        }


def test_main_serves_a_hit_without_the_command(
    run: Path,
    diagnoses: list[Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    import sys

    from ddp_doctor import cli
    from ddp_doctor.report import warm

    cold = _report(run, "--format", "json").stdout
    monkeypatch.setattr(cli, "build_app", lambda: pytest.fail("the command line was built for a hit"))
    monkeypatch.setattr(cli, "_app", None)
    monkeypatch.setattr(sys, "argv", ["ddp-doctor", "report", str(run), "--format", "json"])
    cli.main()
    assert capsys.readouterr().out == cold
    out = tmp_path / "o.json"
    assert warm.serve(["report", str(run), "--format", "json", "-o", str(out)])
    assert out.read_text() == cold and "report written to" in capsys.readouterr().err
    assert len(diagnoses) == 1
    with open(records.rank_file(run, 0), "ab") as fh:  # the run changed: the command runs
        fh.write(b"\n")
    assert not warm.serve(["report", str(run), "--format", "json"])
    assert not warm.serve(["report", str(tmp_path / "missing"), "--format", "json"])
