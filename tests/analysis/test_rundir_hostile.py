"""Damaged and hostile run directories (issue 10, item 5): one test per class.

Each is read and reported in every format: never a traceback or a hang, every problem listed
(`run.problems`, the "data quality" section), verdicts on damaged data downgraded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import Diagnosis, diagnose
from ddp_doctor.report.html import render_html
from ddp_doctor.report.text import render_text
from ddp_doctor.report.to_json import render_json
from ddp_doctor.rundir import records
from ddp_doctor.rundir.rankfile import read_regular
from ddp_doctor.rundir.reader import read_run


def report_all(path: Path) -> Diagnosis:
    """Diagnose and render in every format; return the diagnosis."""
    diag = diagnose(path)
    for lang in ("en", "zh"):
        text = render_text(diag, lang)
        assert ("Data quality" in text or "数据质量" in text) == bool(diag.run_info["problems"])
        html = render_html(diag, lang)
        assert "<html" in html.lower()
    out = json.loads(render_json(diag))
    assert out["run"]["problems"] == diag.run_info["problems"]
    return diag


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", SynthSpec(world_size=2, steps=40, every=10))


def rank_lines(run: Path, rank: int) -> list[str]:
    return records.rank_file(run, rank).read_text().splitlines(keepends=True)


def problems(path: Path) -> list[str]:
    return report_all(path).run_info["problems"]


def has(probs: list[str], *words: str) -> bool:
    return any(all(w in p for w in words) for p in probs)


# --- no step record yet ---------------------------------------------------------------------------


def test_only_headers_and_empty_rank_files(run):
    for r in (0, 1):
        records.rank_file(run, r).write_text(rank_lines(run, r)[0] if r == 0 else "")
    probs = problems(run)
    assert has(probs, "no optimizer step was recorded yet")
    assert has(probs, "rank 1: no header record")


def test_live_run_polled_before_its_first_step(tmp_path):
    path = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=40, ended=False))
    for r in (0, 1):
        keep = [
            ln for ln in rank_lines(path, r) if '"kind":"step"' not in ln and '"kind":"replica"' not in ln
        ]
        records.rank_file(path, r).write_text("".join(keep))
    diag = report_all(path)
    assert diag.run_info["in_progress"] is True
    assert diag.run_info["optimizer_steps"] == 0
    assert has(diag.run_info["problems"], "no optimizer step was recorded yet")


# --- files that are not files -----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["rank", "manifest"])
def test_fifo_is_never_opened(run, where):
    target = records.rank_file(run, 1) if where == "rank" else records.manifest_path(run)
    target.unlink()
    os.mkfifo(target)
    probs = problems(run)  # a blocking open would hang here
    assert has(probs, "not a regular file") or has(probs, "manifest.json", "not readable")


def test_symlink_loops(run):
    records.rank_file(run, 1).unlink()
    os.symlink(records.rank_file(run, 1).name, records.rank_file(run, 1))
    records.manifest_path(run).unlink()
    os.symlink("manifest.json", records.manifest_path(run))
    probs = problems(run)
    assert has(probs, "rank-00001.jsonl", "not a regular file")
    assert has(probs, "manifest.json", "symlink")


def test_directory_where_a_file_is_expected(run):
    records.rank_file(run, 1).unlink()
    records.rank_file(run, 1).mkdir()
    records.manifest_path(run).unlink()
    records.manifest_path(run).mkdir()
    probs = problems(run)
    assert has(probs, "rank-00001.jsonl", "not a regular file")
    assert has(probs, "manifest.json", "not a regular file")


def test_unreadable_rank_file(run, monkeypatch):
    import ddp_doctor.rundir.rankfile as rankfile

    real = rankfile.scan.read_regular

    def refuse(path, limit=None, **kw):
        if path.name == records.rank_file_name(1):
            raise OSError(f"{path.name}: Permission denied")
        return real(path, limit, **kw)

    monkeypatch.setattr(rankfile.scan, "read_regular", refuse)  # root reads any mode; simulate EACCES
    probs = problems(run)
    assert has(probs, "rank 1: cannot read", "Permission denied")


# --- hostile JSON -------------------------------------------------------------------------------


def test_json_nested_thousands_deep(run):
    deep = "[" * 50_000 + "]" * 50_000
    with open(records.rank_file(run, 0), "a") as fh:
        fh.write('{"kind":"step","step":3,"x":' + deep + "}\n")
        fh.write('{"kind":"config","what":"ddp","step":0,"bucket_cap_mb":' + deep + "}\n")
    records.manifest_path(run).write_text('{"schema":"ddp-doctor.run/1","env":' + deep + "}")
    probs = problems(run)
    assert has(probs, "manifest.json", "not readable")
    assert has(probs, "rank 0", "corrupt line") or has(probs, "rank 0", "duplicate step")


def test_huge_numbers_size_no_allocation(run):
    lines = rank_lines(run, 0)
    header = json.loads(lines[0])
    header["world_size"] = 10**9
    lines[0] = json.dumps(header) + "\n"
    lines.append('{"kind":"step","step":1e30,"micro_steps":1}\n')
    lines.append('{"kind":"step","step":4611686018427387904,"micro_steps":1,"losses":[1.0]}\n')
    lines.append('{"kind":"step","step":12345678,"micro_steps":1000000000,"losses":[1.0]}\n')
    lines.append('{"kind":"step","step":2,"micro_steps":1000000000,"losses":[1.0, 2.0]}\n')
    records.rank_file(run, 0).write_text("".join(lines))
    diag = report_all(run)
    probs = diag.run_info["problems"]
    assert has(probs, "implausible world size")
    assert has(probs, "impossible step number")
    assert diag.run_info["world_size"] == 2
    assert diag.run_info["optimizer_steps"] == 40


def test_wrong_types_anywhere(run):
    lines = rank_lines(run, 0)
    step = json.loads(lines[-5])
    assert step["kind"] == "step" or True
    lines.append('{"kind":["step"],"step":1}\n')
    lines.append(
        '{"kind":"config","what":"ddp","step":0,"find_unused_parameters":"yes","batchnorm":{"a":1}}\n'
    )
    lines.append('{"kind":"config","what":"optimizer","step":0,"type":"AdamW","groups":{"lr":1}}\n')
    lines.append('{"kind":"sampler","step":"x","epoch":[1],"head":"abc"}\n')
    lines.append('{"kind":"replica","step":39,"params":"no","total":5}\n')
    lines.append('{"kind":"end","steps":"many"}\n')
    lines.append("[1, 2, 3]\n")
    lines.append('"just a string"\n')
    records.rank_file(run, 0).write_text("".join(lines))
    manifest = json.loads(records.manifest_path(run).read_text())
    manifest.update(env=["WORLD_SIZE=2"], command="train.py", exit_code="0", every=[1])
    records.manifest_path(run).write_text(json.dumps(manifest))
    probs = problems(run)
    assert has(probs, "manifest.json", "wrong type", "manifest.env")
    assert has(probs, "rank 0", "wrong type", "config.ddp.find_unused_parameters")
    assert has(probs, "rank 0", "corrupt line")


def test_string_losses_are_a_problem_not_nonfinite(run):
    lines = rank_lines(run, 1)
    for i, ln in enumerate(lines):
        rec = json.loads(ln)
        if rec["kind"] == "step" and rec["step"] == 5:
            rec["losses"] = ["2.5", "abc"]
            lines[i] = json.dumps(rec) + "\n"
    records.rank_file(run, 1).write_text("".join(lines))
    diag = report_all(run)
    assert has(diag.run_info["problems"], "rank 1", "wrong type", "step.losses")
    assert {f.id: f.status for f in diag.findings}["nonfinite"] != "confirmed"


# --- silently wrong before ---------------------------------------------------------------------------


def test_schema_10_is_not_schema_1(run):
    manifest = json.loads(records.manifest_path(run).read_text())
    manifest["schema"] = "ddp-doctor.run/10"
    records.manifest_path(run).write_text(json.dumps(manifest))
    lines = rank_lines(run, 0)
    lines[0] = lines[0].replace("ddp-doctor.rank/1", "ddp-doctor.rank/10")
    records.rank_file(run, 0).write_text("".join(lines))
    probs = problems(run)
    assert has(probs, "manifest.json", "unknown schema", "run/10")
    assert has(probs, "rank 0", "unknown schema", "rank/10")
    assert records.schema_problem("ddp-doctor.run/1.3", records.RUN_SCHEMA) is None


def test_duplicate_step_numbers_are_counted_once(run):
    path = records.rank_file(run, 0)
    path.write_text(path.read_text() * 2)  # e.g. two runs appended into one file
    diag = report_all(run)
    probs = diag.run_info["problems"]
    assert has(probs, "rank 0", "duplicate step record")
    assert has(probs, "rank 0", "2 header records")
    assert diag.run_info["optimizer_steps"] == 40
    assert len(read_run(run).ranks[0].steps) == 40
    verdicts = {h.id: h.verdict for h in diag.hypotheses}
    assert "ruled-out" not in verdicts.values()  # damaged data rules nothing out


def test_mismatched_headers_extra_ranks_and_two_names(run):
    lines = rank_lines(run, 1)
    lines[0] = lines[0].replace('"rank":1', '"rank":0').replace('"world_size":2', '"world_size":3')
    records.rank_file(run, 1).write_text("".join(lines))
    (run / records.RANKS_DIR / "rank-7.jsonl").write_text("".join(rank_lines(run, 0)))
    (run / records.RANKS_DIR / "rank-0.jsonl").write_text("".join(rank_lines(run, 0)))
    probs = problems(run)
    assert has(probs, "rank 1: its header says rank 0")
    assert has(probs, "rank headers disagree on world_size")
    assert has(probs, "rank 0 has two files")
    assert has(probs, "missing for rank(s) 2")
    (run / records.RANKS_DIR / "rank-00002.jsonl").write_text("".join(rank_lines(run, 0)))
    lines[0] = lines[0].replace('"world_size":3', '"world_size":2')
    records.rank_file(run, 1).write_text("".join(lines))
    probs = problems(run)
    assert has(probs, "beyond the world size", "7")


def test_short_rank_without_end_and_sigkilled_rank(tmp_path):
    path = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=40))
    lines = rank_lines(path, 1)
    keep = [ln for ln in lines if not (ln.startswith('{"kind":"step","step":3') or '"kind":"end"' in ln)]
    records.rank_file(path, 1).write_text("".join(keep))
    manifest = json.loads(records.manifest_path(path).read_text())
    manifest["exit_code"] = 1
    records.manifest_path(path).write_text(json.dumps(manifest))
    diag = report_all(path)
    assert has(diag.run_info["problems"], "rank 1 (last step 29)", "no end record", "exit code 1")
    assert "ruled-out" not in {h.verdict for h in diag.hypotheses}


@pytest.mark.parametrize("where", ["missing/dir/report.json", "."])
def test_output_into_a_missing_directory_or_onto_a_directory_is_an_input_error(run, tmp_path, where):
    from typer.testing import CliRunner

    from ddp_doctor.cli import app

    result = CliRunner().invoke(app, ["report", str(run), "--format", "json", "-o", str(tmp_path / where)])
    assert result.exit_code == 2
    assert "cannot write" in result.output


# --- found by tests/hostile/ (damage that used to pass without a note) ---------------------------


def test_header_world_size_below_one_is_a_problem(run):
    lines = rank_lines(run, 0)
    head = json.loads(lines[0])
    lines[0] = json.dumps(dict(head, world_size=0)) + "\n"
    records.rank_file(run, 0).write_text("".join(lines))
    assert has(problems(run), "rank(s) 0", "world_size below 1")


def test_negative_micro_steps_is_a_problem(run):
    lines = rank_lines(run, 0)
    i = next(i for i, ln in enumerate(lines) if '"kind":"step"' in ln.replace(" ", ""))
    lines[i] = json.dumps(dict(json.loads(lines[i]), micro_steps=-3)) + "\n"
    records.rank_file(run, 0).write_text("".join(lines))
    assert has(problems(run), "rank 0", "negative micro_steps")


def test_manifest_claiming_more_rank_files_than_present_is_a_problem(run):
    manifest = json.loads(records.manifest_path(run).read_text())
    records.manifest_path(run).write_text(json.dumps(dict(manifest, ranks=10**9)))
    assert has(problems(run), "says 1000000000 rank file(s) were written; 2 found")


@pytest.mark.parametrize("text", ["{not json", '{"failures": [1, 2]}', "[" * 50_000 + "]" * 50_000])
def test_damaged_launcher_exits_file_is_a_problem(run, text):
    (run / "launcher").mkdir()
    (run / "launcher" / "exits-h-1-1.json").write_text(text)
    assert has(problems(run), "launcher/", "not a launcher failure report")


def test_damaged_trainer_metrics_lines_are_counted(run):
    path = records.trainer_metrics_path(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"step": 1, "loss": 2.0}\n{broken\n[1, 2]\n' + "[" * 50_000 + "]" * 50_000 + "\n")
    assert has(problems(run), "metrics.jsonl: 3 line(s) that are not JSON objects skipped")


def test_a_hole_at_the_end_of_a_rank_file_is_not_read(run):
    """A rank file preallocated/extended to 8 GiB and never written (a crash) used to be read whole:
    8 GB of memory. Only the written data is read; the hole is named."""
    path = records.rank_file(run, 1)
    os.truncate(path, 8 << 30)
    if os.stat(path).st_blocks * 512 >= 8 << 30:
        pytest.skip("this file system has no sparse files")
    holes: list[int] = []
    assert len(read_regular(path, holes=holes)) < 1 << 20
    assert holes and holes[0] > 8 << 29
    assert has(problems(run), "rank 1", "never written (a hole")
    path.write_bytes(b"")  # all hole: nothing at all is read
    os.truncate(path, 8 << 30)
    holes = []
    assert read_regular(path, holes=holes) == b"" and holes == [8 << 30]


def test_a_run_path_that_cannot_be_looked_at_is_exit_2(tmp_path, monkeypatch):
    """Found by tests/hostile/ (run as nobody): `report DIR` under a folder we may not enter
    raised PermissionError from Path.is_dir (Python 3.11). Root enters any folder: simulate EACCES."""
    from typer.testing import CliRunner

    from ddp_doctor.cli import app

    target = tmp_path / "locked" / "run"
    real_is_dir, real_lstat = Path.is_dir, os.lstat

    def is_dir(self):
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_dir(self)

    def lstat(path, *args, **kwargs):
        if Path(path) == target:
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    monkeypatch.setattr(os, "lstat", lstat)
    result = CliRunner().invoke(app, ["report", str(target), "--format", "json"])
    assert result.exit_code == 2, result.output
    assert "cannot access (Permission denied)" in result.output
