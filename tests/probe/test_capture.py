"""The logged-loss capture's pure pieces: the line patterns and the transparent stream wrapper."""

from __future__ import annotations

import io
import logging
import math
import sys

import pytest

from ddp_doctor.probe.capture import sink, streams
from ddp_doctor.probe.capture.patterns import float_resolution, parse_line, resolution_of


@pytest.mark.parametrize(
    ("line", "key", "value", "step"),
    [
        ("loss: 2.31", "loss", 2.31, None),
        ("loss=2.31", "loss", 2.31, None),
        ("{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 1e-4, 'epoch': 0.5}", "loss", 2.31, None),
        ("{'loss': '4.843', 'grad_norm': '0.4509'}", "loss", 4.843, None),
        ('"train/loss": 2.1', "train/loss", 2.1, None),
        ("train/loss 2.31", "train/loss", 2.31, None),
        ("step 10 | loss 2.3100", "loss", 2.31, 10),
        ("iter 10: loss 2.3100, time 12.3ms, mfu 1.2%", "loss", 2.31, 10),
        ("Epoch [1/10], Step [100/600], Loss: 0.2345", "loss", 0.2345, 100),
        (" 50%|#####     | 5/10 [00:01<00:00, loss=2.31]", "loss", 2.31, None),
        ("loss tensor(2.3100, grad_fn=<DivBackward0>)", "loss", 2.31, None),
        ("Loss 0.41 (0.45)", "loss", 0.41, None),
        ("epoch 2 loss is 1.5e-2", "loss", 0.015, None),
        ("INFO:__main__:step=4 loss=1.234", "loss", 1.234, 4),
        ("update 3: loss=0.6931", "loss", 0.6931, 3),
    ],
)
def test_common_loss_lines_are_parsed(line, key, value, step):
    values, user_step = parse_line(line)
    assert values[0].key == key
    assert math.isclose(values[0].value, value)
    assert user_step == step


def test_train_and_val_losses_on_one_line_keep_their_names():
    values, step = parse_line("step 3: train loss 2.31, val loss 2.40")
    assert [(v.key, v.value) for v in values] == [("train loss", 2.31), ("val loss", 2.4)]
    assert step == 3


@pytest.mark.parametrize("line", ["loss_scale: 65536", "no loss here", "accuracy 0.93", "", "loss"])
def test_lines_without_a_loss_value_give_nothing(line):
    assert parse_line(line)[0] == []


def test_nan_loss_is_kept():
    values, _ = parse_line("loss=nan")
    assert math.isnan(values[0].value) and values[0].resolution == 0.0


def test_resolution_is_half_a_unit_of_the_last_printed_digit():
    assert resolution_of("2.31") == pytest.approx(0.005)
    assert resolution_of("2") == pytest.approx(0.5)
    assert resolution_of("2.3e-4") == pytest.approx(5e-6)
    assert float_resolution(2.3456) == pytest.approx(5e-5)  # HF Trainer's round(loss, 4)
    assert float_resolution(2.345678912345678) < 1e-12


@pytest.fixture
def seen(monkeypatch):
    """Collect what the stream wrapper would record (no probe needed)."""
    got = []
    monkeypatch.setattr(
        sink, "emit", lambda source, key, value, res, step: got.append((source, key, value, step))
    )
    return got


def test_tee_passes_every_write_through_unchanged_and_returns_its_result(seen):
    inner = io.StringIO()
    tee = streams.TeeStream(inner, "stdout")
    assert tee.write("hello ") == 6
    tee.writelines(["a\n", "b\n"])
    assert inner.getvalue() == "hello a\nb\n"


def test_tee_joins_partial_lines_and_splits_progress_bar_redraws(seen):
    tee = streams.TeeStream(io.StringIO(), "stdout")
    for piece in ("step", " 7", " loss", ": ", "2.5", "\n"):  # what print() of several args does
        tee._ddp_doctor_see(piece)
    for value in ("1.50", "1.50", "1.25"):  # tqdm redraws the same postfix with "\r"
        tee._ddp_doctor_see(f"\r 10%|#   | 1/10 [00:01<00:09, loss={value}]")
    tee._ddp_doctor_see("\n")
    assert seen == [("stdout", "loss", 2.5, 7), ("stdout", "loss", 1.5, None), ("stdout", "loss", 1.25, None)]


def test_tee_bounds_an_unfinished_line(seen):
    tee = streams.TeeStream(io.StringIO(), "stdout")
    tee._ddp_doctor_see("x" * (streams.MAX_PENDING + 10))
    assert tee._ddp_doctor_pending == ""
    tee._ddp_doctor_see("loss 1.0\n")
    assert seen == [("stdout", "loss", 1.0, None)]


def test_tee_is_transparent_for_attributes_and_binary_writes():
    raw = io.BytesIO()
    inner = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape")
    tee = streams.TeeStream(inner, "stdout")
    assert tee.encoding == "utf-8" and tee.isatty() is False and tee.writable()
    tee.buffer.write(b"\xff binary\n")  # bytes go to the real buffer, unseen
    tee.write("caf\udce9 loss=1\n")  # non-UTF-8 byte carried as a surrogate
    tee.flush()
    assert raw.getvalue() == b"\xff binary\ncaf\xe9 loss=1\n"
    with pytest.raises(io.UnsupportedOperation):
        tee.fileno()  # BytesIO has none: the real stream's answer, unchanged


def test_tee_hands_non_text_writes_to_the_real_stream():
    class Recorder:
        def __init__(self):
            self.got = []

        def write(self, x):
            self.got.append(x)
            return 42

    inner = Recorder()
    assert streams.TeeStream(inner, "stderr").write(b"bytes") == 42
    assert inner.got == [b"bytes"]


def test_install_keeps_the_std_streams_themselves_and_sees_print_and_logging(monkeypatch, seen, tmp_path):
    from ddp_doctor.probe.options import ProbeOptions
    from ddp_doctor.probe.state import PROBE

    monkeypatch.setattr(PROBE, "options", ProbeOptions(run_dir=tmp_path))  # a probed process
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    handler = logging.StreamHandler(err)  # configured before the probe started
    log = logging.getLogger("ddp_doctor.test_capture")
    log.addHandler(handler)
    try:
        streams.install()
        streams.install()  # idempotent: no wrapper around a wrapper
        assert sys.stdout is out and isinstance(sys.stdout, io.TextIOWrapper)  # what scripts test
        assert sys.stderr is err and handler.stream is err
        assert streams.watched(out) and streams.watched(err)
        print("step 3 loss 2.5")
        sys.stdout.writelines(["loss: 1.5\n"])
        log.warning("loss 1.0")
        later = logging.StreamHandler()  # created after: holds sys.stderr, still seen
        log.addHandler(later)
        log.warning("val loss 0.5")
        log.removeHandler(later)
        sys.stdout.flush()
        assert out.buffer.getvalue() == b"step 3 loss 2.5\nloss: 1.5\n"
        assert err.getvalue() == "loss 1.0\nval loss 0.5\nval loss 0.5\n"
        assert [(s, k, v) for s, k, v, _ in seen] == [
            ("stdout", "loss", 2.5),
            ("stdout", "loss", 1.5),
            ("stderr", "loss", 1.0),
            ("stderr", "val loss", 0.5),
            ("stderr", "val loss", 0.5),
        ]
    finally:
        log.removeHandler(handler)
        for stream in (out, err):
            stream.__dict__.pop("write", None)


def test_a_stream_without_instance_attributes_is_proxied_and_its_handlers_repointed(monkeypatch):
    class Slotted:
        __slots__ = ("got",)

        def __init__(self):
            self.got = []

        def write(self, text):
            self.got.append(text)
            return len(text)

        def flush(self):
            pass

    out, err = Slotted(), Slotted()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    handler = logging.StreamHandler(err)
    file_like = logging.StreamHandler(io.StringIO())
    log = logging.getLogger("ddp_doctor.test_capture_slotted")
    log.addHandler(handler)
    log.addHandler(file_like)
    try:
        streams.install()
        assert isinstance(sys.stdout, streams.TeeStream) and sys.stdout._ddp_doctor_stream is out
        assert handler.stream is sys.stderr and not isinstance(file_like.stream, streams.TeeStream)
        log.warning("loss 1.0")
        assert err.got == ["loss 1.0\n"]
    finally:
        log.removeHandler(handler)
        log.removeHandler(file_like)


def test_after_import_runs_every_callback_once_the_module_is_executed(tmp_path, monkeypatch):
    from ddp_doctor.probe import state
    from ddp_doctor.probe.afterimport import AfterImport

    for name in ("zoo_lib_a", "zoo_lib_b"):
        (tmp_path / f"{name}.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    state.after_import("zoo_lib_a", lambda: seen.append(("a1", sys.modules["zoo_lib_a"].VALUE)))
    state.after_import("zoo_lib_a", lambda: seen.append(("a2", sys.modules["zoo_lib_a"].VALUE)))
    state.after_import("zoo_lib_b", lambda: seen.append(("b", sys.modules["zoo_lib_b"].VALUE)))
    finders = [f for f in sys.meta_path if isinstance(f, AfterImport)]
    assert len(finders) == 1  # one finder, whatever the number of names
    try:
        import zoo_lib_a  # noqa: F401

        assert seen == [("a1", 42), ("a2", 42)]
        import zoo_lib_b  # noqa: F401

        assert seen[-1] == ("b", 42)
        assert not any(isinstance(f, AfterImport) for f in sys.meta_path) or state._AFTER_IMPORT.waiting
        state.after_import("zoo_lib_b", lambda: seen.append(("now", 1)))  # already imported: at once
        assert seen[-1] == ("now", 1)
    finally:
        for name in ("zoo_lib_a", "zoo_lib_b"):
            sys.modules.pop(name, None)


def test_under_ddp_doctor_run_the_std_streams_are_still_the_interpreters_own(tmp_path):
    import subprocess

    from probe.helpers import DDP_DOCTOR, base_env

    check = (
        "import io, sys, torch\n"
        "from ddp_doctor.probe.state import PROBE\n"
        "assert PROBE.active, 'the probe did not start'\n"
        "assert sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__\n"
        "assert isinstance(sys.stdout, io.TextIOWrapper) and isinstance(sys.stderr, io.TextIOWrapper)\n"
        "print('identity ok')\n"
    )
    proc = subprocess.run(
        [*DDP_DOCTOR, "run", "--out", str(tmp_path / "run"), "--", sys.executable, "-c", check],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "identity ok" in proc.stdout, proc.stderr[-2000:]
