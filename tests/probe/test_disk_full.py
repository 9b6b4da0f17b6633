"""`--out` on a full disk: `ddp-doctor run` exits with the command's code, says what could not be
written on stderr and, where it still can, in the manifest; the report says the disk was full
(launch/launcher.py `_finish_manifest`, probe/recorder.py)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.launch import launcher
from ddp_doctor.probe.options import ProbeOptions
from ddp_doctor.probe.recorder import RankRecorder
from probe.helpers import DDP_DOCTOR, SCRIPTS, base_env


def test_a_failing_final_manifest_write_keeps_the_commands_exit_code(tmp_path, monkeypatch, capsys):
    options = ProbeOptions(run_dir=tmp_path / "run")
    real = launcher.write_manifest
    calls = []

    def write(run_dir, manifest, path=None):
        calls.append(dict(manifest))
        if "exit_code" in manifest:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(run_dir, manifest, path)

    monkeypatch.setattr(launcher, "write_manifest", write)
    assert launcher.run(["train"], options, environ={}, runner=lambda cmd, env: 0) == 0
    assert launcher.run(["train"], ProbeOptions(run_dir=tmp_path / "r3"), {}, lambda c, e: 3) == 3
    assert calls[1]["exit_code"] == 0
    err = capsys.readouterr().err
    assert "could not write the final manifest.json ([Errno 28] No space left on device)" in err
    assert "the command exited with code 3" in err


def test_a_nearly_full_file_system_is_noted_in_the_manifest_and_the_report(tmp_path, monkeypatch, capsys):
    options = ProbeOptions(run_dir=tmp_path / "run")

    class Full:
        f_bavail, f_frsize, f_blocks = 2, 4096, 16

    monkeypatch.setattr(launcher.os, "statvfs", lambda path: Full())
    assert launcher.run(["train"], options, environ={}, runner=lambda cmd, env: 0) == 0
    manifest = json.loads((options.run_dir / "manifest.json").read_text())
    assert manifest["exit_code"] == 0
    (note,) = manifest["write_errors"]
    assert note.startswith("the file system holding the run directory was full when the command ended (8,192")
    assert note in capsys.readouterr().err
    assert not (options.run_dir / "launcher" / launcher.RESERVE_NAME).exists()
    from fixtures.synth_run import SynthSpec, write_run

    run = write_run(tmp_path / "synth", SynthSpec(steps=20, accum=1))
    (run / "manifest.json").write_text(
        json.dumps({**json.loads((run / "manifest.json").read_text()), **manifest})
    )
    problems = diagnose(run).run_info["problems"]
    assert any("file system holding the run directory was full" in p for p in problems)
    assert not any("still in progress" in p for p in problems)


def test_the_rank_file_stops_at_its_last_whole_line_when_a_write_fails(tmp_path, monkeypatch):
    rec = RankRecorder(tmp_path)
    rec.open(0, {"kind": "header", "rank": 0})
    rec.write({"kind": "end", "steps": 1, "reason": "exit"})
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:7]))  # the disk fills mid-line
    with pytest.raises(OSError):
        rec.write({"kind": "end", "steps": 2, "reason": "exit"})
    monkeypatch.setattr(os, "write", real_write)
    rec.write({"kind": "end", "steps": 3, "reason": "exit"})  # space freed: no gap is written after a cut
    lines = (tmp_path / "ranks" / "rank-00000.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["header", "end"]
    assert rec.error is not None and not rec.is_open


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    if os.geteuid() != 0:
        return False
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    return proc.returncode == 0


@pytest.mark.slow  # ~20-40 s here: a bare and a probed 200-step run, and a report
def test_a_real_run_on_a_64k_tmpfs_exits_0_and_the_report_says_the_disk_was_full(tmp_path):
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "64k"):
        pytest.skip("needs root and tmpfs mounts to make a small file system")
    try:
        out = disk / "run"
        cmd = [sys.executable, str(SCRIPTS / "many_steps.py")]
        env = base_env(STEPS="200")
        bare = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        proc = subprocess.run(
            [*DDP_DOCTOR, "run", "--out", str(out), "--every", "1", "--", *cmd],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]  # the command's code, not 2
        assert proc.stdout == bare.stdout and "digest" in bare.stdout  # training itself was not touched
        assert "file system holding the run directory was full" in proc.stderr
        report = subprocess.run(
            [*DDP_DOCTOR, "report", str(out)], capture_output=True, text=True, env=base_env(COLUMNS="300")
        )
        assert report.returncode == 0, report.stderr[-2000:]
        assert "file system holding the run directory was full" in report.stdout
        assert "still in progress" not in report.stdout and "killed or crashed" not in report.stdout
    finally:
        with contextlib.suppress(Exception):
            subprocess.run(["umount", str(disk)], check=False)
