"""The end-to-end fault matrix: each reference-trainer fault on 2 gloo ranks under `ddp-doctor run`,
then `diagnose`; prints fault → expected finding → confirmed findings → confirmed hypotheses.

    python bench/fault_matrix.py [--faults clean,no-sampler,...] [--dir /tmp/ddp-doctor-matrix]

One case at a time, OMP_NUM_THREADS=1 per rank (trainer.launch.build_command), tiny preset. The
settings of every case are in `_cases()`; tests/e2e/test_fault_matrix.py runs the same cases through
`run_case`; `python bench/fault_matrix.py` is this module's `main` (the harness lives with its tests).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORLD = 2
RUN_TIMEOUT_S = 600
CLEAN = "clean"

# Every case: tiny preset, micro-batch 2, accumulation 4, sequences of 64 tokens, 64 documents per
# epoch (4 optimizer steps of 2 ranks x 2 x 4 samples), so 12 steps see 3 epochs: enough for the
# epoch-order and sampler checks, and the faults fire at step 3 (`fault_step`). lr is the trainer's
# default 3e-4: at the demo's 1e-3 the tiny model's first AdamW steps move weights by ~2 % per step
# (update/parameter ratio 0.015–0.024 measured, clean run), which `update-ratio-high` rightly flags.
BASE: dict[str, Any] = {
    "preset": "tiny",
    "steps": 12,
    "micro_batch": 2,
    "accum": 4,
    "seq_len": 64,
    "dataset_docs": 64,
    "warmup_steps": 4,
    "lr": 3e-4,
    "fault_step": 3,
}


@dataclass(frozen=True)
class Case:
    fault: str  # a trainer fault name, or CLEAN
    level: str = "basic"
    every: int = 2
    fields: dict[str, Any] = field(default_factory=dict)  # TrainConfig overrides

    @property
    def faults(self) -> tuple[str, ...]:
        return () if self.fault == CLEAN else (self.fault,)


def _cases() -> dict[str, Case]:
    from ddp_doctor.trainer.faults import FAULTS

    # `full` records per-micro-step statistics (gradient norms, checksums of replicas) every
    # `every` steps: the findings that compare micro-steps or replicas need it.
    full = {
        "clean",
        "zero-grad-per-micro",
        "sync-every-micro",
        "replica-desync",
        "bypass-ddp",
        "loss-unscaled",
        "sync-toggle-after-forward",
    }
    # lr-too-high: x300 of the base lr. From 3e-4 (9e-2) the loss rises 4.1 -> 9.2 nats at step 5,
    # above its init value but < 2x the running mean; from 1e-3 (0.3) it jumps to > 2x by step 5.
    fields = {"lr-too-high": {"lr": 1e-3}}
    cases = {CLEAN: Case(CLEAN, level="full")}
    for name in FAULTS:
        cases[name] = Case(name, level="full" if name in full else "basic", fields=fields.get(name, {}))
    return cases


def expected_ids(fault: str) -> tuple[str, ...]:
    """The runtime findings a fault must confirm: FAULT_FINDINGS minus lint-only IDs."""
    from ddp_doctor.core.catalog import FINDINGS
    from ddp_doctor.trainer.faults import FAULT_FINDINGS

    fid = FAULT_FINDINGS.get(fault)
    return (fid,) if fid and FINDINGS[fid].runtime else ()


def run_case(case: Case, run_dir: Path, sets: dict[str, str] | None = None) -> int:
    """Run the trainer for `case` under the probe into `run_dir`; return the exit code.

    `sets` are `ddp-doctor run --set K=V` interventions. Output goes to run_dir/launch.log.
    """
    from ddp_doctor.launch import launcher
    from ddp_doctor.probe.options import ProbeOptions
    from ddp_doctor.rundir.records import TRAINER_DIR
    from ddp_doctor.trainer.config import TrainConfig
    from ddp_doctor.trainer.launch import build_command

    run_dir.mkdir(parents=True, exist_ok=True)
    cfg = TrainConfig(
        **{
            **BASE,
            **case.fields,
            "faults": case.faults,
            "out_dir": str(run_dir / TRAINER_DIR),
            "progress": False,
        }
    )
    command = build_command(cfg, WORLD)
    env = dict(command.env)
    if sets:
        from ddp_doctor.probe.interventions import ENV_VAR, to_env

        env[ENV_VAR] = to_env(sets)
    log = run_dir / "launch.log"

    def runner(argv: list[str], child_env: dict[str, str]) -> int:
        with log.open("w") as out:
            return subprocess.run(
                argv, env=child_env, stdout=out, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, check=False
            ).returncode

    return launcher.run(
        command.argv,
        ProbeOptions(
            run_dir=run_dir,
            level=case.level,  # type: ignore[arg-type]
            every=case.every,
        ),
        environ=env,
        runner=runner,
    )


@dataclass
class Row:
    fault: str
    expected: tuple[str, ...]
    confirmed: list[str]  # confirmed findings, every severity
    alerts: list[str]  # the confirmed ones of severity warning/error
    hypotheses: list[str]  # confirmed hypotheses
    exit_code: int
    seconds: float

    @property
    def ok(self) -> bool:
        if self.fault == CLEAN:
            return not self.alerts
        return set(self.expected) <= set(self.confirmed)


ALERTS = ("warning", "error")


def confirmed_ids(diagnosis: Any, severities: tuple[str, ...] = ALERTS) -> list[str]:
    return [f.id for f in diagnosis.findings if f.status == "confirmed" and f.severity in severities]


def matrix_row(case: Case, run_dir: Path) -> Row:
    from ddp_doctor.analysis.diagnose import diagnose

    t = time.perf_counter()
    code = run_case(case, run_dir)
    seconds = time.perf_counter() - t
    d = diagnose(run_dir)
    return Row(
        fault=case.fault,
        expected=expected_ids(case.fault),
        confirmed=confirmed_ids(d, ("error", "warning", "info")),
        alerts=confirmed_ids(d),
        hypotheses=[h.id for h in d.hypotheses if h.verdict == "confirmed"],
        exit_code=code,
        seconds=seconds,
    )


def format_table(rows: list[Row]) -> str:
    lines = [
        "| fault | expected (runtime) | confirmed findings (info in parentheses) | confirmed hypotheses | ok |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        found = [f if f in r.alerts else f"({f})" for f in r.confirmed]
        none = "— (clean)" if r.fault == CLEAN else "— (lint-only ID)"
        lines.append(
            f"| {r.fault} | {', '.join(r.expected) or none} | "
            f"{', '.join(found) or '—'} | {', '.join(r.hypotheses) or '—'} | "
            f"{'yes' if r.ok else 'NO'} |"
        )
    return "\n".join(lines)


def main() -> None:
    cases = _cases()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", default=",".join(cases), help="comma-separated; default all")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-matrix"))
    args = parser.parse_args()
    rows = []
    for name in args.faults.split(","):
        run_dir = args.dir / name
        if run_dir.exists():
            import shutil

            shutil.rmtree(run_dir)
        row = matrix_row(cases[name], run_dir)
        print(
            f"{name}: exit {row.exit_code}, {row.seconds:.0f} s, confirmed {row.confirmed}",
            file=sys.stderr,
            flush=True,
        )
        rows.append(row)
    print(format_table(rows))


if __name__ == "__main__":
    main()
