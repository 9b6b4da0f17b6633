"""`ddp-doctor --help`, `demo --help` and a short real demo run (torchrun, 2 gloo ranks)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import teardown_race
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.demo import DEMO_FAULTS
from ddp_doctor.trainer.config import TrainConfig
from ddp_doctor.trainer.launch import build_command

runner = CliRunner()


def test_root_help_lists_demo_and_train() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "demo" in result.output and "train" in result.output


def test_demo_help_shows_its_options() -> None:
    result = runner.invoke(app, ["demo", "--help"])
    assert result.exit_code == 0
    for option in ("--clean", "--fault", "--steps", "--world", "--out"):
        assert option in result.output


def test_help_does_not_import_torch_or_transformers() -> None:
    code = (
        "import sys; from ddp_doctor.cli import app; "
        "print(any(m in sys.modules for m in ('torch', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_demo_rejects_unknown_faults() -> None:
    result = runner.invoke(app, ["demo", "--fault", "not-a-fault"])
    assert result.exit_code == 2


def test_launch_command_uses_torchs_launcher_with_one_thread_per_rank() -> None:
    command = build_command(TrainConfig(steps=3, faults=("no-set-epoch",)), nproc=4, port=12345)
    assert command.argv[1:8] == [
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "4",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
    ]
    assert command.argv[command.argv.index("-m", 2) :] == [
        "-m",
        "ddp_doctor.trainer",
        "--steps",
        "3",
        "--fault",
        "no-set-epoch",
    ]
    assert command.env["OMP_NUM_THREADS"] == "1"


@pytest.mark.distributed
def test_short_demo_runs_two_ranks_under_the_probe_and_ends_with_the_diagnosis(tmp_path) -> None:
    result = runner.invoke(app, ["demo", "--world", "2", "--steps", "3", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (tmp_path / "trainer" / "metrics.jsonl").read_text().splitlines()]
    assert [rec["step"] for rec in lines] == [0, 1, 2]
    assert lines[0]["samples"] == 2 * 8 * 2  # micro-batch 2, accumulation 8, world 2
    assert "world size 2" in result.output
    for fault in DEMO_FAULTS:
        assert fault in result.output
    # The probe recorded both ranks and the report ran: the per-micro-batch scheduler is caught
    # after 3 steps already (the repeated epoch order needs more steps than this).
    names = sorted(p.name for p in (tmp_path / "ranks").iterdir())
    assert [n for n in names if n.startswith("rank-")] == ["rank-00000.jsonl", "rank-00001.jsonl"]
    # besides them, at most each rank's rollup index (docs/run-format.md)
    assert set(names) <= {"rank-00000.jsonl", "rank-00001.jsonl", "rollup-00000.jsonl", "rollup-00001.jsonl"}
    code = json.loads((tmp_path / "manifest.json").read_text())["exit_code"]
    assert teardown_race.accept_exit(tmp_path, code, "demo"), result.output  # demo exits 0 on both
    assert "lr-schedule" in result.output and "scheduler-per-microstep" in result.output
    assert "<html" in (tmp_path / "report.html").read_text()


def test_demo_refuses_a_directory_that_already_holds_a_run(tmp_path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    result = runner.invoke(app, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 2


def test_train_help_lists_every_trainer_flag() -> None:
    result = runner.invoke(app, ["train", "--help"])
    assert result.exit_code == 0
    for flag in ("--fault", "--accum", "--micro-batch", "--strategy", "--precision", "--out-dir"):
        assert flag in result.output


def test_train_in_one_process_writes_metrics(tmp_path) -> None:
    result = runner.invoke(
        app,
        [
            "train",
            "--steps",
            "2",
            "--accum",
            "1",
            "--seq-len",
            "32",
            "--out-dir",
            str(tmp_path),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 2
    assert "world size 1" in (tmp_path / "summary.txt").read_text()
