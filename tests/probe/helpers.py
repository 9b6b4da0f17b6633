"""Run unmodified training scripts under `ddp-doctor run` and read what the probe wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import teardown_race

SCRIPTS = Path(__file__).resolve().parent / "scripts"
DDP_DOCTOR = [sys.executable, "-m", "ddp_doctor.cli"]
# Generous: 2 ranks share 2 CPU cores with other test runs; a hang must still end the test.
RUN_TIMEOUT_S = 300


def torchrun(script: str, *args: str, nproc: int = 2) -> list[str]:
    # --standalone picks a free port for the rendezvous: tests run in parallel with others.
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        str(SCRIPTS / script),
        *args,
    ]


def base_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def run_probe(
    out: Path, command: list[str], *options: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [*DDP_DOCTOR, "run", "--out", str(out), *options, "--", *command],
        env=env or base_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    if check and proc.returncode != 0 and not teardown_race.tolerated(proc, out, f"run_probe {command[-1]}"):
        raise AssertionError(
            f"exit {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
        )
    return proc


def run_plain(command: list[str], env: dict[str, str] | None = None) -> None:
    """Run a bare (unprobed) script; every such script here takes last the file rank 0 saves after
    its final step, which proves the run complete when only the teardown race fails it."""
    output = Path(command[-1])

    def attempt() -> subprocess.CompletedProcess:
        output.unlink(missing_ok=True)  # each attempt proves its own completion
        return subprocess.run(
            command, env=env or base_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
        )

    what = f"run_plain {command[-1]}"
    proc = teardown_race.run_retrying(attempt, what)
    if teardown_race.tolerated_output(proc, output, what):
        return
    assert proc.returncode == 0, proc.stderr[-4000:]


def read_rank(out: Path, rank: int) -> list[dict[str, Any]]:
    lines = (out / "ranks" / f"rank-{rank:05d}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def kind(records: list[dict[str, Any]], name: str, what: str | None = None) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == name and (what is None or r.get("what") == what)]


def rank_files(out: Path) -> list[Path]:
    return sorted((out / "ranks").glob("rank-*.jsonl"))


def close(a: float, b: float, rel: float = 1e-5) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)
