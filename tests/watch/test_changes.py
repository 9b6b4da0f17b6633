"""Verdict changes, alerts, the stop and the view, on synthetic runs followed as they grow."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.synth_run import SynthSpec, write_run
from rich.console import Console

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.core.findings import Finding
from ddp_doctor.report.command import render
from ddp_doctor.rundir import records
from ddp_doctor.rundir.reader import read_run
from ddp_doctor.watch import view
from ddp_doctor.watch.actions import Actions, parse_stop_on
from ddp_doctor.watch.follow import Watcher
from ddp_doctor.watch.verdicts import Change, Tracker, decides_at


def _grow(src: Path, live: Path, fractions: tuple[float, ...], end: bool = True):
    """Yield after each piece of ``src``'s rank files is appended to ``live`` (then the end)."""
    (live / records.RANKS_DIR).mkdir(parents=True)
    manifest = json.loads(records.manifest_path(src).read_text())
    running = {k: v for k, v in manifest.items() if k not in ("end", "exit_code", "ranks")}
    records.manifest_path(live).write_text(json.dumps(running))
    files = [(p.name, p.read_bytes()) for p in sorted((src / records.RANKS_DIR).iterdir())]
    for frac in fractions:
        for name, data in files:
            path = live / records.RANKS_DIR / name
            done = path.stat().st_size if path.exists() else 0
            with open(path, "ab") as fh:
                fh.write(data[done : int(len(data) * frac)])
        yield frac
    if end:
        records.manifest_path(live).write_text(json.dumps(manifest))
        yield 1.0


def test_a_fault_is_confirmed_once_with_its_step_and_the_final_state_is_the_report(tmp_path):
    src = write_run(tmp_path / "src", SynthSpec(world_size=2, steps=200, faults=("nonfinite",)))
    live = tmp_path / "live"
    log = tmp_path / "alerts.jsonl"
    watcher = Watcher(live, Actions(live, alert_log=log))
    seen = []
    for _ in _grow(src, live, (0.1, 0.3, 0.6, 1.0)):
        seen += watcher.refresh()
    assert watcher.refresh() == [] and watcher.ended
    confirmed = [c for c in seen if c.kind == "finding" and c.new == "confirmed"]
    assert "nonfinite" in [c.id for c in confirmed]
    nonfinite = next(c for c in confirmed if c.id == "nonfinite")
    assert isinstance(nonfinite.step, int) and 0 <= nonfinite.step < 200
    # once per ID and status change: the alert log holds each change once
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    keys = [(x["id"], x["status"]) for x in lines]
    assert len(keys) == len(set(keys)) and ("nonfinite", "confirmed") in keys
    assert all(x["kind"] == "finding" and x["run"] == str(live) for x in lines)
    assert lines[keys.index(("nonfinite", "confirmed"))]["finding"]["evidence"]
    # the watcher's final verdicts are the report's on the finished run
    full = diagnose_run(read_run(live, use_cache=False))
    assert {h.id: h.verdict for h in watcher.diag.hypotheses} == {h.id: h.verdict for h in full.hypotheses}
    assert {f.id: f.status for f in watcher.diag.findings} == {f.id: f.status for f in full.findings}
    assert watcher.exit_code() == 0
    watcher.fail_on = "error"
    assert watcher.exit_code() == 1  # nonfinite is an error: as `report --fail-on error`


def _f(fid: str, status: str, **evidence) -> Finding:
    return Finding(id=fid, status=status, severity="warning", summary="s", evidence=evidence)  # type: ignore[arg-type]


class _Diag:
    """The parts of a Diagnosis the tracker reads."""

    def __init__(self, findings, hypotheses=(), answer="not-measured", step=10):
        self.findings = findings
        self.hypotheses = list(hypotheses)
        self.run_info = {"oscillation": {"answer": answer, "summary": answer}}

        class _Steps:
            def __init__(self):
                import numpy as np

                self.step = np.arange(step + 1)

            def __len__(self):
                return len(self.step)

        class _Rank:
            steps = _Steps()

        class _Run:
            ranks = {0: _Rank()}

        class _Ctx:
            run = _Run()

        self.context = _Ctx()


def test_flips_are_changes_and_repeats_are_not():
    t = Tracker()
    assert [c.id for c in t.update(_Diag([_f("loss-spike", "inconclusive")]))] == []
    up = t.update(_Diag([_f("loss-spike", "confirmed")], answer="not-noise", step=40))
    assert [(c.kind, c.id, c.old, c.new, c.step) for c in up] == [
        ("answer", "bug-or-noise", None, "not-noise", 40),
        ("finding", "loss-spike", "inconclusive", "confirmed", 40),
    ]
    assert not any(c.flip for c in up)
    assert t.update(_Diag([_f("loss-spike", "confirmed")], answer="not-noise", step=41)) == []
    down = t.update(_Diag([_f("loss-spike", "ruled-out")], answer="noise", step=90))
    assert [(c.id, c.old, c.new) for c in down] == [
        ("bug-or-noise", "not-noise", "noise"),
        ("loss-spike", "confirmed", "ruled-out"),
    ]
    assert all(c.flip for c in down)  # a decided verdict that went back is shown as a flip
    assert t.confirmed_at == {"loss-spike": 40}


def test_undecided_checks_say_when_they_decide():
    from ddp_doctor.analysis.checks.instability import MIN_STEPS

    f = _f("loss-unstable", "not-measured", steps=3)
    assert decides_at(f, 3, None) == 3 + MIN_STEPS - 3
    assert decides_at(_f("loss-unstable", "ruled-out", steps=3), 3, None) is None  # decided
    assert decides_at(_f("replica-divergence", "inconclusive"), 60, 25) == 75  # the next checksum
    assert decides_at(_f("sampler-missing", "not-measured"), 5, 25) is None  # waits for no step count


def test_stop_on_parsing():
    assert parse_stop_on("nonfinite, loss-spike") == (frozenset({"nonfinite", "loss-spike"}), False)
    assert parse_stop_on("error") == (frozenset(), True)
    with pytest.raises(ValueError, match="no-such-id"):
        parse_stop_on("nonfinite,no-such-id")


def test_on_finding_gets_the_change_as_json_and_a_failing_command_is_noted(tmp_path):
    got = tmp_path / "got.json"
    change = Change("finding", "nonfinite", "not-measured", "confirmed", 12, "NaN at step 12", "error")
    a = Actions(tmp_path, on_finding=f"cat > {got}")
    a.on_change(change)
    rec = json.loads(got.read_text())
    assert rec["id"] == "nonfinite" and rec["status"] == "confirmed" and rec["step"] == 12
    a = Actions(tmp_path, on_finding="exit 3")
    a.on_change(change)
    assert a.notes == ["--on-finding for nonfinite: exit code 3"]
    a = Actions(tmp_path, on_finding=f"cat > {got}")
    a.on_change(Change("hypothesis", "precision", None, "confirmed", 12, "x"))  # not a finding: no alert
    assert json.loads(got.read_text())["step"] == 12


def test_alert_log_never_written_through_a_symlink(tmp_path):
    target = tmp_path / "target"
    target.write_text("keep\n")
    log = tmp_path / "alerts.jsonl"
    log.symlink_to(target)
    a = Actions(tmp_path, alert_log=log)
    a.on_change(Change("finding", "nonfinite", None, "confirmed", 1, "x", "error"))
    assert target.read_text() == "keep\n" and "cannot write" in a.notes[0]


def test_stop_writes_why_then_terminates_the_launchers_process_group(tmp_path):
    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=40, ended=False))
    # a stand-in launcher in its own process group, named by a claim file as `ddp-doctor run` does
    launcher = subprocess.Popen(  # its command line names ddp_doctor, as the real launcher's does
        [sys.executable, "-c", "import time; time.sleep(60)", "ddp_doctor-stand-in"], start_new_session=True
    )
    deadline = time.monotonic() + 30
    while (
        b"ddp_doctor" not in Path(f"/proc/{launcher.pid}/cmdline").read_bytes()
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)  # until it has exec'd: before that its command line is still pytest's
    try:
        claim = {"pid": launcher.pid, "host": socket.gethostname(), "start": "now"}
        (run / records.CLAIM).write_text(json.dumps(claim))
        a = Actions(run, stop_ids=frozenset({"nonfinite"}))
        a.on_change(Change("finding", "loss-spike", None, "confirmed", 5, "spike", "warning"))
        assert a.stopped is None  # not a finding it was told to stop on
        a.on_change(Change("finding", "nonfinite", None, "confirmed", 7, "NaN loss at step 7", "error"))
        assert launcher.wait(timeout=20) == -signal.SIGTERM
        rec = json.loads((run / records.WATCH_STOP).read_text())
        assert rec["by"] == "ddp-doctor watch" and rec["finding"] == "nonfinite" and rec["step"] == 7
        assert rec["signalled"][0]["pid"] == launcher.pid and rec["signalled"][0]["to"] == "process group"
        # the report says who stopped it and why
        text = render(diagnose_run(read_run(run)), "text")
        assert "Stopped by ddp-doctor watch" in text and "finding nonfinite confirmed at step 7" in text
        data = json.loads(render(diagnose_run(read_run(run)), "json"))
        assert data["run"]["stopped"]["finding"] == "nonfinite"
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_stop_without_a_running_launcher_writes_nothing(tmp_path):
    """A run that already ended (no live launcher named by a claim): the watcher must not write
    that it stopped the job — the report would say so."""
    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=40))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    claim = {"pid": int(dead.stdout), "host": socket.gethostname(), "start": "then"}
    (run / records.CLAIM).write_text(json.dumps(claim))  # left by a launcher that is gone
    a = Actions(run, stop_on_error=True)
    a.on_change(Change("finding", "nonfinite", None, "confirmed", 7, "NaN", "error"))
    assert a.stopped is None and not (run / records.WATCH_STOP).exists()
    assert any("nothing stopped" in n for n in a.notes)
    assert "Stopped by" not in render(diagnose_run(read_run(run)), "text")


def test_damaged_stop_record_is_a_problem_not_a_crash(tmp_path):
    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=40))
    (run / records.WATCH_STOP).write_text("{not json")
    data = read_run(run)
    assert data.stopped is None and any("who stopped the job is unknown" in p for p in data.problems)
    assert "stopped" not in diagnose_run(data).run_info


def test_live_view_renders_and_escapes(tmp_path):
    spec = SynthSpec(world_size=3, steps=120, faults=("loss-spike",))
    src = write_run(tmp_path / "src", spec)
    live = tmp_path / "live\x1b[31m"  # a hostile directory name reaches the view escaped
    watcher = Watcher(live, Actions(live))
    console = Console(record=True, width=140, force_terminal=True, color_system="truecolor")
    for _ in _grow(src, live, (0.05, 0.5, 1.0)):
        watcher.refresh()
        console.print(view.render(watcher))
    text = console.export_text()
    assert "\x1b[31m" not in text and "live\\x1b[31m" in text
    assert "rank 2" in text and "global" in text and "spikes-clipping" in text
    assert "loss-spike" in text and "confirmed" in text
    assert any(ch in text for ch in view.BARS)


def test_sparkline():
    import numpy as np

    assert view.sparkline(np.array([1.0, 2.0, 3.0]), 3) == "▁▅█"
    assert view.sparkline(np.array([1.0, np.nan, np.inf]), 3) == "▁ !"
    assert view.sparkline(np.zeros(0)) == ""
    assert view.sparkline(np.zeros(5), 5) == "▁▁▁▁▁"  # constant (zero) series: flat, no division by 0
    assert view.sparkline(np.full(4, np.nan), 4) == "    "  # nothing finite yet
    assert len(view.sparkline(np.arange(1000.0), 60)) == 60


def test_watch_cli_on_an_ended_run_exits_at_once_with_fail_on(tmp_path):
    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=120, faults=("nonfinite",)))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddp_doctor.cli",
            "watch",
            str(run),
            "--fail-on",
            "error",
            "--interval",
            "0.1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "finding nonfinite [error]: not-measured -> confirmed" in proc.stdout  # plain: not a tty
    assert "[watch] exit code 1" in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "ddp_doctor.cli", "watch", str(run), "--stop-on", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown finding ID" in bad.stderr


def test_watch_waits_for_a_run_that_has_not_started(tmp_path):
    run = tmp_path / "later"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ddp_doctor.cli", "watch", str(run), "--interval", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()  # its first refresh found no run: waiting, not failing
        assert first.startswith("[watch] waiting for a run in") and proc.poll() is None
        # written elsewhere and renamed into place: the watcher never sees a half-written fixture
        os.rename(write_run(tmp_path / "elsewhere", SynthSpec(world_size=2, steps=60)), run)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "run ended at step 59" in out and "waiting" not in out  # said once


def test_live_mode_follows_to_the_end_and_prints_the_final_lines(tmp_path, capsys):
    from ddp_doctor.watch.command import follow

    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=80, faults=("nonfinite",)))
    watcher = Watcher(run, Actions(run), fail_on="error")
    assert follow(watcher, 0.05, live=True) == 1
    out = capsys.readouterr().out
    assert "ddp-doctor watch" in out and "hypothesis" in out and "nonfinite" in out
    assert "[watch] exit code 1; the full report: ddp-doctor report" in out


def test_many_ranks_show_the_extremes_and_a_count(tmp_path):
    run = write_run(tmp_path / "run", SynthSpec(world_size=12, steps=40))
    watcher = Watcher(run, Actions(run))
    watcher.refresh()
    console = Console(record=True, width=140)
    console.print(view.render(watcher))
    text = console.export_text()
    assert text.count("rank ") >= 8 and "(4 more ranks not shown)" in text


def test_run_with_an_unknown_stop_on_id_starts_nothing(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(out), "--stop-on", "nope", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "unknown finding ID(s) nope" in proc.stderr
    assert not records.manifest_path(out).exists()


def test_a_claim_whose_pid_now_runs_something_else_is_not_signalled(tmp_path):
    run = write_run(tmp_path / "run", SynthSpec(world_size=2, steps=40, ended=False))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    deadline = time.monotonic() + 30
    while b"sleep(60)" not in Path(f"/proc/{other.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)  # until it has exec'd (before that its command line is pytest's)
    try:
        claim = {"pid": other.pid, "host": socket.gethostname(), "start": "then"}
        (run / records.CLAIM).write_text(json.dumps(claim))  # a stale claim; its pid was reused
        a = Actions(run, stop_ids=frozenset({"nonfinite"}))
        a.on_change(Change("finding", "nonfinite", None, "confirmed", 7, "NaN", "error"))
        time.sleep(0.5)
        assert other.poll() is None and a.stopped is None and not (run / records.WATCH_STOP).exists()
    finally:
        other.kill()


def test_watch_of_a_file_fails_at_once(tmp_path):
    log = tmp_path / "trainer_state.json"
    log.write_text("{}")
    proc = subprocess.run(
        [sys.executable, "-m", "ddp_doctor.cli", "watch", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "not a directory" in proc.stderr
