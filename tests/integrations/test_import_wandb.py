"""Import a W&B offline run written by the real wandb client (WANDB_MODE=offline), read by wandb's reader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SCRIPTS, clean_env, need


@pytest.fixture(scope="module")
def wandb_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("wandb")
    tmp = tmp_path_factory.mktemp("wandb")
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "wandb_offline_run.py"), str(tmp)],
        capture_output=True,
        text=True,
        env=clean_env(tmp),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (tmp / "wandb").glob("offline-run-*")
    return run


def test_offline_run_dir_is_imported_with_hf_global_steps(wandb_run: Path) -> None:
    from ddp_doctor.report.load import load

    r = load(wandb_run, world_size=2, micro_batch=8)
    imp = r.run["imported"]
    assert imp["source"] == "wandb"
    assert imp["steps"] == 200 and imp["first_step"] == 0 and imp["step_base"] == 1
    assert imp["keys"]["loss"] == "train/loss"
    spike = r.finding("loss-spike")
    assert spike.status == "confirmed" and spike.evidence["spikes"][0]["step"] == 120
    nonfinite = r.finding("nonfinite")
    assert nonfinite.status == "confirmed" and nonfinite.evidence["first_step"] == 180
    assert r.finding("warmup-short").evidence["warmup_steps"] == 9
    assert r.run["effective_batch"]["samples"] == 16


def test_the_wandb_file_itself_can_be_given(wandb_run: Path) -> None:
    from ddp_doctor.report.load import load

    (log,) = wandb_run.glob("*.wandb")
    assert load(log).run["imported"]["steps"] == 200


def test_the_wandb_dir_itself_imports_its_newest_offline_run(wandb_run: Path) -> None:
    from ddp_doctor.report.load import load

    r = load(wandb_run.parent)
    assert r.run["imported"]["steps"] == 200
    assert Path(r.run["imported"]["path"]).parent == wandb_run


def test_hostile_records_from_the_wandb_reader_are_counted_not_raised(tmp_path: Path, monkeypatch) -> None:
    """What `wandb leet inspect --json` prints is read defensively: history of the wrong type, a step
    of inf, a line nested thousands deep are skipped and counted (issue 10: matrix finding)."""
    pytest.importorskip("wandb")
    from ddp_doctor.rundir.sources import wandb_offline

    lines = [
        '{"type": "history", "history": [1, 2]}',
        '{"type": "history", "history": {"step": 5, "item": {"loss": 1.0}}}',
        '{"type": "history", "history": {"item": {"loss": 1.0, "_step": 1e999}}}',
        '{"type": "history", "history": {"item": ' + "[" * 50000 + "]" * 50000 + "}}",
        '{"type": "history", "history": {"step": {"num": 3}, "item": {"loss": 2.0}}}',
    ]
    out = tmp_path / "records.jsonl"
    out.write_text("\n".join(lines) + "\n")
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\ncat {out}\n")
    fake.chmod(0o755)
    log = tmp_path / "run-x.wandb"
    log.write_bytes(b"")
    monkeypatch.setattr(wandb_offline.sys, "executable", str(fake))
    series = wandb_offline.read_wandb_offline(log)
    assert series.scalars["loss"] == [(3, 2.0)]
    assert any("not usable" in p for p in series.problems)
