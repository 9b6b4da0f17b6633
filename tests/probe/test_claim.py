"""One `ddp-doctor run` per run directory at a time (issue 10, item 3)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from ddp_doctor.launch.claim import RunDirBusy, claim, claim_path, release
from ddp_doctor.rundir.records import manifest_path


def test_second_claim_is_refused_until_released(tmp_path):
    held = claim(tmp_path / "run")
    with pytest.raises(RunDirBusy, match="in use by another"):
        claim(tmp_path / "run")
    assert claim(tmp_path / "run", node=1) != held  # per-node claims do not contend with each other
    release(held)
    release(claim(tmp_path / "run"))


def test_claim_of_a_killed_launcher_is_taken_over(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    import socket

    path = claim_path(tmp_path)
    path.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "start": "x"}))
    release(claim(tmp_path))


def test_concurrent_run_into_one_out_is_refused_with_exit_2(tmp_path):
    out = tmp_path / "run"
    cli = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(out), "--"]
    first = subprocess.Popen(
        [*cli, sys.executable, "-c", "import time; time.sleep(30)"], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not claim_path(out).exists():
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = subprocess.run(
            [*cli, sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 2
        assert "in use by another `ddp-doctor run`" in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=60)
    assert not claim_path(out).exists()  # released at the end
    assert "exit_code" in json.loads(manifest_path(out).read_text())
