"""A real 2-rank gloo run watched live: `run --watch`, and `watch` started before, during and after
the run (slow: ~45 s); then the stop path (`run --stop-on`, ~30 s on 2 shared cores): the job is
stopped, the run directory is complete and the report says who stopped it and why."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import teardown_race
from probe.helpers import torchrun

from ddp_doctor.rundir import records

pytestmark = pytest.mark.distributed
SCRIPT = Path(__file__).resolve().parent / "scripts" / "tiny_ddp.py"
CLI = [sys.executable, "-m", "ddp_doctor.cli"]
TIMEOUT_S = 300
ENV_EXTRA = {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _env() -> dict[str, str]:
    import os

    return {**os.environ, **ENV_EXTRA}


def _torchrun(*args: str) -> list[str]:
    return torchrun(str(SCRIPT), *args)  # an absolute path: SCRIPTS / SCRIPT is SCRIPT


def _watch(run: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "watch", str(run), "--interval", "1", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def final_verdicts(lines: str) -> dict[str, str]:
    """Each hypothesis's last verdict in a watcher's plain lines (never printed: not measured)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"hypothesis (\S+): (?:\S+ -> )?(\S+?)(?: \(FLIP\))? —", lines):
        out[m.group(1)] = m.group(2)
    return out


def _report(run: Path, fmt: str = "json") -> str:
    rep = subprocess.run(
        [*CLI, "report", str(run), "--format", fmt], capture_output=True, text=True, timeout=120
    )
    assert rep.returncode == 0, rep.stderr
    return rep.stdout


@pytest.mark.slow  # ~45 s: four watchers beside the job; the stop test below runs `run --watch` in CI
def test_watchers_before_during_and_after_a_real_run_end_with_the_report(tmp_path):
    run = tmp_path / "run"
    before = _watch(run)  # the directory does not exist yet
    job = subprocess.Popen(
        [*CLI, "run", "--out", str(run), "--watch", "--", *_torchrun("--steps", "80", "--sleep", "0.05")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        start_new_session=True,
    )
    watchers = [before]
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not list((run / records.RANKS_DIR).glob("rank-*.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.2)
        watchers.append(_watch(run))  # during: ranks are writing
        out, err = job.communicate(timeout=TIMEOUT_S)
        proc = subprocess.CompletedProcess(job.args, job.returncode, out, err)
        assert job.returncode == 0 or teardown_race.tolerated(proc, run, "watch live run"), err[-3000:]
        watchers.append(_watch(run))  # after: the run has ended
        outputs = [w.communicate(timeout=TIMEOUT_S) for w in watchers]
    finally:
        for p in [job, *watchers]:
            if p.poll() is None:
                p.kill()
    report = json.loads(_report(run))
    expected = {h["id"]: h["verdict"] for h in report["hypotheses"] if h["verdict"] != "not-measured"}
    # `run --watch`: the watcher's lines are on the launcher's stderr, beside (not inside) the ranks' output
    assert "[watch] run ended at step 79" in err and "[watch]" not in out
    assert final_verdicts(err) == expected
    for w, (w_out, w_err) in zip(watchers, outputs):
        assert w.returncode == 0, w_err
        assert "[watch] run ended at step 79" in w_out
        assert final_verdicts(w_out) == expected
    assert outputs[0][0].startswith("[watch] waiting for a run in")


def test_stop_on_stops_the_job_and_the_report_says_who_and_why(tmp_path):
    run = tmp_path / "run"
    alerts = tmp_path / "alerts.jsonl"
    job = subprocess.run(
        [
            *CLI,
            "run",
            "--out",
            str(run),
            "--stop-on",
            "nonfinite",
            "--alert-log",
            str(alerts),
            "--",
            *_torchrun("--steps", "1000000", "--sleep", "0.02", "--nan-at", "15"),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=TIMEOUT_S,
        start_new_session=True,  # the stop signals the launcher's process group: not pytest's
    )
    assert job.returncode != 0, job.stderr[-3000:]  # stopped, not finished (a million steps)
    stop = json.loads((run / records.WATCH_STOP).read_text())
    assert stop["by"] == "ddp-doctor watch" and stop["finding"] == "nonfinite" and stop["step"] >= 15
    assert stop["signalled"] and stop["signalled"][0]["to"] == "process group"
    manifest = json.loads(records.manifest_path(run).read_text())
    assert "end" in manifest and manifest["exit_code"] == job.returncode  # the launcher still finished it
    assert all(p.stat().st_size > 0 for p in (run / records.RANKS_DIR).glob("rank-*.jsonl"))
    text = _report(run, "text")
    assert "Stopped by ddp-doctor watch" in text and "finding nonfinite confirmed at step" in text
    logged = [json.loads(x) for x in alerts.read_text().splitlines()]
    assert ("nonfinite", "confirmed") in [(x["id"], x["status"]) for x in logged]
    assert "[watch] --stop-on: stopping the job: finding nonfinite confirmed" in job.stderr  # when it happens
    assert "[watch] stopped the job: finding nonfinite confirmed" in job.stderr  # and in the summary
