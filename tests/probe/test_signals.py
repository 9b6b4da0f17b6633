"""`ddp-doctor run` passes every signal on to the command once, never exits before it, and
answers a command it cannot start as a shell would (launch/launcher.py, wait_forwarding_signals)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from probe.helpers import DDP_DOCTOR, SCRIPTS, base_env

CHILD = [sys.executable, str(SCRIPTS / "signals_child.py")]
TIMEOUT_S = 60


def _start(tmp_path: Path, linger: float = 0.5, **popen) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "signals.txt"
    env = base_env(SIGNALS_OUT=str(out), LINGER=str(linger))
    proc = subprocess.Popen(
        [*DDP_DOCTOR, "run", "--out", str(tmp_path / "run"), "--", *CHILD],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )
    deadline = time.monotonic() + TIMEOUT_S
    while not Path(str(out) + ".ready").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    return proc, out


def _finish(proc: subprocess.Popen) -> int:
    try:
        proc.communicate(timeout=TIMEOUT_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    return proc.returncode


@pytest.mark.parametrize(
    "sig",
    [
        signal.SIGQUIT,
        signal.SIGTERM,
        pytest.param(signal.SIGINT, marks=pytest.mark.slow),
        pytest.param(signal.SIGHUP, marks=pytest.mark.slow),
    ],
)
def test_a_signal_sent_to_ddp_doctor_reaches_the_command_once_and_its_code_comes_back(tmp_path, sig):
    proc, out = _start(tmp_path)
    proc.send_signal(sig)
    assert _finish(proc) == 40 + sig  # the command's code, not 128 + sig of ddp-doctor dying
    assert out.read_text().split() == [sig.name]


def test_ddp_doctor_waits_for_a_command_that_takes_its_time_to_stop(tmp_path):
    proc, out = _start(tmp_path, linger=2.0)
    proc.send_signal(signal.SIGTERM)
    time.sleep(1.0)
    assert proc.poll() is None  # the command still runs: so does ddp-doctor
    proc.send_signal(signal.SIGUSR1)  # and keeps passing signals on meanwhile
    assert _finish(proc) == 40 + signal.SIGTERM
    assert out.read_text().split() == ["SIGTERM", "SIGUSR1"]


@pytest.mark.parametrize(("key", "sig"), [(b"\x1c", signal.SIGQUIT), (b"\x03", signal.SIGINT)])
def test_a_terminal_key_reaches_the_command_once_not_twice(tmp_path, key, sig):
    """Ctrl-\\ and Ctrl-C go to the whole foreground process group: ddp-doctor must not send a second."""
    master, slave = os.openpty()

    def controlling_tty() -> None:  # the new session's terminal is the pty: its keys send signals
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        proc, out = _start(tmp_path, stdin=slave, start_new_session=True, preexec_fn=controlling_tty)
        os.write(master, key)
        assert _finish(proc) == 40 + sig
        assert out.read_text().split() == [sig.name]
    finally:
        os.close(master)
        os.close(slave)


def test_a_command_that_is_not_executable_is_126_and_a_missing_one_127(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    run = [*DDP_DOCTOR, "run", "--out"]
    not_exec = subprocess.run([*run, str(tmp_path / "a"), "--", str(script)], capture_output=True, text=True)
    assert not_exec.returncode == 126, not_exec.stderr
    assert "cannot execute" in not_exec.stderr
    missing = subprocess.run(
        [*run, str(tmp_path / "b"), "--", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert missing.returncode == 127, missing.stderr
