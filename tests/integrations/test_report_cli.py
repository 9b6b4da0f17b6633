"""`ddp-doctor report`: --fail-on exit codes, import flags and their errors."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from ddp_doctor.cli import app


def _invoke(*args: str):
    return CliRunner().invoke(app, ["report", *args])


def test_fail_on_exits_1_only_for_confirmed_findings_at_or_above_the_level(
    make_run: Callable[..., Path],
) -> None:
    clean = make_run(steps=80)
    warned = make_run(steps=80, faults=("set-epoch-missing",))  # a warning
    errored = make_run(steps=80, faults=("sampler-missing",))  # an error
    assert _invoke(str(clean), "--fail-on", "warning", "-f", "json").exit_code == 0
    assert _invoke(str(warned), "--fail-on", "error", "-f", "json").exit_code == 0
    res = _invoke(str(warned), "--fail-on", "warning", "-f", "json")
    assert res.exit_code == 1 and "set-epoch-missing" in res.stderr
    assert _invoke(str(errored), "--fail-on", "error", "-f", "json").exit_code == 1
    assert _invoke(str(clean), "--fail-on", "fatal").exit_code == 2


def test_import_flags_and_errors(tmp_path: Path) -> None:
    state = {
        "log_history": [{"my_loss": 2.0 + (3.0 if s == 60 else 0.0), "step": s} for s in range(1, 100)],
        "train_batch_size": 4,
    }
    log = tmp_path / "trainer_state.json"
    log.write_text(json.dumps(state))
    res = _invoke(str(log), "-f", "json")
    assert res.exit_code == 2 and "--key loss=NAME" in res.stderr
    assert _invoke(str(log), "--key", "nonsense").exit_code == 2
    res = _invoke(str(log), "-f", "json", "--key", "loss=my_loss", "--world-size", "4", "--accum", "2")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["run"]["effective_batch"]["samples"] == 4 * 4 * 2
    assert {f["id"]: f["status"] for f in data["findings"]}["loss-spike"] == "confirmed"
    res = _invoke(str(log), "-f", "json", "--key", "loss=my_loss", "--fail-on", "warning")
    assert res.exit_code == 1


def test_unknown_or_damaged_inputs_exit_2_with_a_message(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    for name, words in (
        ("notes.txt", "no log ddp-doctor can import"),
        ("bad.json", "not readable as JSON"),
        ("other.json", "log_history"),
        ("missing", "no such directory"),
    ):
        res = _invoke(str(tmp_path / name))
        assert res.exit_code == 2, name
        assert words in res.stderr, (name, res.stderr)
    (tmp_path / "empty").mkdir()
    res = _invoke(str(tmp_path / "empty"))
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_trainer_state_nested_thousands_deep_or_a_fifo_exits_2(tmp_path: Path) -> None:
    """Found by tests/hostile/: RecursionError out of json.loads; a FIFO blocked the read."""
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "trainer_state.json").write_text("[" * 100_000 + "]" * 100_000)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "trainer_state.json")
    for path, words in ((deep, "RecursionError"), (fifo / "trainer_state.json", "trainer_state.json")):
        res = _invoke(str(path))
        assert res.exit_code == 2 and words in res.stderr, res.output


def test_tensorboard_event_file_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    """Found by tests/hostile/: tensorboard's reader opened a FIFO named events.out.tfevents.*
    and waited forever."""
    import signal

    only = tmp_path / "only-fifo"
    only.mkdir()
    os.mkfifo(only / "events.out.tfevents.1.host")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "events.out.tfevents.1.host").write_bytes(b"\x00" * 64)
    os.mkfifo(mixed / "events.out.tfevents.2.host")

    def hang(signum, frame):
        raise TimeoutError("report hung on a FIFO")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        assert _invoke(str(only)).exit_code == 2
        res = _invoke(str(mixed))
        assert res.exit_code == 2 and "not regular files" in res.stderr, res.output
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
