"""A rank that fails under `ddp-doctor run`: the report says it first, and nothing secret from
the command, the environment or the exception text reaches the run directory (issue 21)."""

from __future__ import annotations

import json
import subprocess

import pytest

from probe.helpers import DDP_DOCTOR, base_env, run_probe, torchrun

KEY = "K3y-of-the-command-77"
URL_PASSWORD = "pgPa55word99"
HF = "hf_" + "x7" * 15
WANDB = "0a1b2c3d4e" * 4


def test_a_rank_raising_with_secrets_in_its_message_is_reported_first_and_redacted(tmp_path):
    out = tmp_path / "run"
    message = f"login failed with {KEY} at postgres://trainer:{URL_PASSWORD}@db/x, token {HF}, wandb {WANDB}"
    env = base_env(FAIL_HOW="raise", FAIL_RANK="1", FAIL_STEP="5", FAIL_MESSAGE=message, WANDB_API_KEY=WANDB)
    proc = run_probe(out, torchrun("rank_fails.py", "--api-key", KEY), env=env, check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "ddp-doctor: The run failed: rank 1 exited with code 1 in step 5" in proc.stderr
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_text(errors="replace")
            for secret in (KEY, URL_PASSWORD, HF, WANDB):
                assert secret not in data, (path.name, secret)
    end = json.loads((out / "ranks" / "rank-00001.jsonl").read_text().splitlines()[-1])
    assert end["kind"] == "end" and end["exception"].startswith("RuntimeError: login failed with <redacted>")
    report = subprocess.run(
        [*DDP_DOCTOR, "report", str(out)], capture_output=True, text=True, env=base_env(COLUMNS="200")
    )
    lines = report.stdout.splitlines()
    assert lines[1].startswith(
        "The run failed: rank 1 exited with code 1 in step 5 (steps 0–4 recorded): RuntimeError"
    )
    assert "Only up to step 5: rank 1 failed there." in report.stdout


@pytest.mark.slow  # ~20 s each here
@pytest.mark.parametrize(
    ("how", "first"),
    [
        ("exit", "The run failed: rank 1 exited with code 3 in step 5 (steps 0–4 recorded)."),
        ("kill", "The run failed: rank 1 was killed by SIGKILL in step 5 (steps 0–4 recorded)."),
    ],
)
def test_a_rank_that_exits_or_is_killed_is_reported_first(tmp_path, how, first):
    out = tmp_path / "run"
    proc = run_probe(out, torchrun("rank_fails.py"), env=base_env(FAIL_HOW=how), check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = subprocess.run(
        [*DDP_DOCTOR, "report", str(out)], capture_output=True, text=True, env=base_env(COLUMNS="200")
    )
    assert report.stdout.splitlines()[1].startswith(first), report.stdout[:2000]
