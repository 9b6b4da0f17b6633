"""A failed run is the first thing the report says, and its verdicts cover only the steps before
(analysis/failure.py, ddp_doctor.rundir.teardown.failed_ranks; docs/report.md "Failed runs")."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.report.html import render_html
from ddp_doctor.report.text import render_text
from ddp_doctor.report.to_json import report_dict as to_json
from ddp_doctor.rundir import records
from ddp_doctor.rundir.teardown import EXITS_SUBDIR

STEPS = 30


def _failed_run(
    out: Path,
    code: int,
    cut: dict[int, int],
    exceptions: dict[int, str] | None = None,
    launcher: dict[int, int] | None = None,
    world: int = 2,
) -> Path:
    """A synthetic run whose rank r stopped after cut[r] steps (no `end`, unless it raised)."""
    write_run(out, SynthSpec(world_size=world, steps=STEPS, accum=1))
    manifest = json.loads(records.manifest_path(out).read_text())
    manifest["exit_code"] = code
    records.manifest_path(out).write_text(json.dumps(manifest))
    for rank, steps in cut.items():
        path = records.rank_file(out, rank)
        kept = [
            line
            for line in path.read_text().splitlines()
            if json.loads(line).get("kind") not in ("end", "unused", "replica")
            and json.loads(line).get("step", 0) < steps
        ]
        message = (exceptions or {}).get(rank)
        if message is not None:
            end = {"kind": "end", "time": 1e9 + rank, "steps": steps, "reason": "exit", "exception": message}
            kept.append(json.dumps(end))
        path.write_text("\n".join(kept) + "\n")
    if launcher is not None:
        (out / EXITS_SUBDIR).mkdir(exist_ok=True)
        failures = {str(r): {"exitcode": c} for r, c in launcher.items()}
        (out / EXITS_SUBDIR / "exits-h-1-1.json").write_text(json.dumps({"failures": failures}))
    return out


def test_a_rank_that_raised_is_said_first_in_text_html_and_json(tmp_path):
    run = _failed_run(
        tmp_path,
        1,
        {1: 5, 0: 5},
        exceptions={
            1: "RuntimeError: boom at step 5\nsecond line",
            0: "RuntimeError: Connection closed by peer",
        },
        launcher={1: 1, 0: -15},
    )
    diag = diagnose(run)
    failure = diag.run_info["failure"]
    assert failure["stopped_at"] == {"rank": 1, "step": 5, "exit_code": 1, "signal": None}
    assert [r["rank"] for r in failure["ranks"]] == [1, 0]  # the cause before the rank it took down
    assert failure["ranks"][1]["stopped_by_launcher"] and failure["ranks"][1]["signal"] == "SIGTERM"
    text = render_text(diag, width=200)
    first = text.splitlines()[1]  # right under the title
    assert first.startswith("The run failed: rank 1 exited with code 1 in step 5 (steps 0–4 recorded)")
    assert "RuntimeError: boom at step 5" in first and "second line" not in text
    assert "rank 0 was stopped by the launcher (SIGTERM)" in text
    html = render_html(diag)
    assert html.index("The run failed: rank 1") < html.index("<h2>")
    report = to_json(diag)
    assert report["run"]["failure"]["summary"] == failure["summary"]
    assert report["run"]["exit_status"]["failed_ranks"][0]["exception"] == "RuntimeError: boom at step 5"
    zh = render_text(diag, lang="zh", width=200)
    assert "运行失败：rank 1 以退出码 1 退出" in zh


def test_every_verdict_built_on_the_steps_before_says_where_the_run_stopped(tmp_path):
    diag = diagnose(_failed_run(tmp_path, 1, {1: 5, 0: 5}, {1: "RuntimeError: boom"}, {1: 1, 0: -15}))
    ruled_out = [f for f in diag.findings if f.status == "ruled-out"]
    assert ruled_out
    for f in ruled_out:
        assert f.coverage is not None and f.coverage["stopped_at"]["rank"] == 1, f.id
        assert "the run stopped at step 5 on rank 1 (exit code 1)" in f.summary, f.id
        assert "运行在 rank 1 的第 5 步停止" in f.summary.get("zh"), f.id
    for h in diag.hypotheses:
        if h.verdict in ("ruled-out", "inconclusive"):
            assert h.summary.startswith("Only up to step 5: rank 1 failed there."), h.id


def test_a_rank_killed_by_a_signal_and_one_that_exited_with_a_code(tmp_path):
    # OOM killer: rank 0 SIGKILL with no `end`; torchrun then SIGTERMs rank 1, which ends cleanly later
    killed = diagnose(_failed_run(tmp_path / "kill", 1, {0: 7, 1: 8}, launcher={0: -9, 1: -15}))
    assert killed.run_info["failure"]["summary"].startswith(
        "The run failed: rank 0 was killed by SIGKILL in step 7 (steps 0–6 recorded)."
    )
    exited = diagnose(_failed_run(tmp_path / "exit", 1, {1: 3}, launcher={1: 3}))
    assert exited.run_info["failure"]["ranks"] == [
        {
            "rank": 1,
            "exit_code": 3,
            "signal": None,
            "steps": 3,
            "exception": None,
            "stopped_by_launcher": False,
        }
    ]


def test_a_single_process_killed_without_launcher_reports_is_its_commands_signal(tmp_path):
    diag = diagnose(_failed_run(tmp_path, 137, {0: 4}, world=1))
    assert diag.run_info["failure"]["stopped_at"] == {
        "rank": 0,
        "step": 4,
        "exit_code": -9,
        "signal": "SIGKILL",
    }


def test_runs_that_did_not_fail_have_no_failure(tmp_path):
    ok = write_run(tmp_path / "ok", SynthSpec(steps=STEPS, accum=1))
    assert diagnose(ok).run_info["failure"] is None
    running = write_run(tmp_path / "running", SynthSpec(steps=STEPS, accum=1, ended=False))
    assert diagnose(running).run_info["failure"] is None
    assert "Only up to" not in render_text(diagnose(running))


def test_an_exception_from_an_older_run_directory_is_redacted_when_shown(tmp_path):
    token = "hf_" + "Q" * 30
    diag = diagnose(_failed_run(tmp_path, 1, {1: 5}, {1: f"ValueError: bad token {token}"}, {1: 1}))
    assert token not in json.dumps(to_json(diag)) and token not in render_text(diag)
