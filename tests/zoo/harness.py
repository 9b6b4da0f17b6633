"""Score ddp-doctor on the zoo: small unmodified training scripts, each with one fault or none.

Every script in tests/zoo/scripts/ declares what a correct diagnosis confirms in its first line:

    # zoo: expect=accum-loss-unscaled,rank0-only-loss-log     (all of these, any severity)
    # zoo: expect=update-ratio-high|loss-spike                 (one of the alternatives)
    # zoo: expect=none                                         (a clean script)

optionally followed by `; allow=ID,...` (consequences of the fault that may also be confirmed:
neither required nor a false alarm), `; requires=MODULE` (skipped when MODULE does not import) and
`; nproc=N` (default 2). Each script runs unmodified under `ddp-doctor run` (basic level, default
options) with torchrun and 2 gloo ranks on CPU, then `diagnose`. Scores per script:

- detected: expected groups of which at least one ID is confirmed;
- false alarms: confirmed findings of severity warning/error that the header does not expect;
- crash: the run or the diagnosis failed (the known torch/gloo teardown abort after a run whose
  rank files all end with an `end` record is not a crash: docs/probe.md).

    python bench/zoo.py [--only a.py,b.py] [--dir /tmp/ddp-doctor-zoo] [--jobs 1]

Prints a Markdown table and a summary line. tests/zoo/test_zoo.py runs a fast subset through
`score_script`; `python bench/zoo.py` is this module's `main` (the harness lives with its tests).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.teardown_race import TEARDOWN_MESSAGE

ZOO = Path(__file__).resolve().parent / "scripts"
RUN_TIMEOUT_S = 900
ALERTS = ("warning", "error")


@dataclass
class Header:
    expect: list[tuple[str, ...]]  # groups of alternatives; [] for a clean script
    allow: list[str] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)
    nproc: int = 2


def read_header(path: Path) -> Header:
    """The `# zoo:` line of a script (ValueError when it has none)."""
    for line in path.read_text(encoding="utf-8").splitlines()[:5]:
        if line.startswith("# zoo:"):
            fields = dict(
                part.strip().split("=", 1) for part in line[len("# zoo:") :].split(";") if "=" in part
            )
            expect = fields.get("expect", "none").strip()
            groups = (
                []
                if expect == "none"
                else [tuple(a.strip() for a in g.split("|")) for g in expect.split(",")]
            )
            requires = [m.strip() for m in fields.get("requires", "").split(",") if m.strip()]
            allow = [m.strip() for m in fields.get("allow", "").split(",") if m.strip()]
            return Header(groups, allow, requires, int(fields.get("nproc", 2)))
    raise ValueError(f"{path.name}: no '# zoo:' header line")


@dataclass
class Score:
    script: str
    expected: list[tuple[str, ...]]
    confirmed: list[str] = field(default_factory=list)  # every severity
    alerts: list[str] = field(default_factory=list)  # warning/error
    detected: int = 0
    false_alarms: list[str] = field(default_factory=list)
    crash: str | None = None
    skipped: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            self.skipped is None
            and self.crash is None
            and self.detected == len(self.expected)
            and not self.false_alarms
        )


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        WANDB_MODE="offline",
        PYTHONUNBUFFERED="1",
    )
    return env


def _all_ranks_ended(run_dir: Path) -> bool:
    files = sorted((run_dir / "ranks").glob("rank-*.jsonl"))
    for f in files:
        lines = [x for x in f.read_text(encoding="utf-8", errors="replace").splitlines() if x.strip()]
        try:
            if not lines or json.loads(lines[-1]).get("kind") != "end":
                return False
        except (ValueError, AttributeError):
            return False
    return bool(files)


def score_script(path: Path, run_dir: Path) -> Score:
    """Run one zoo script under the probe into `run_dir` and score the diagnosis."""
    from ddp_doctor.analysis.diagnose import diagnose

    header = read_header(path)
    score = Score(path.name, header.expect)
    missing = [m for m in header.requires if importlib.util.find_spec(m) is None]
    if missing:
        score.skipped = f"needs {', '.join(missing)}"
        return score
    command = [
        sys.executable,
        "-m",
        "ddp_doctor.cli",
        "run",
        "--out",
        str(run_dir),
        "--",
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={header.nproc}",
        str(path),
    ]
    start = time.perf_counter()
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with (run_dir.parent / f"{run_dir.name}.log").open("w") as log:
        try:
            proc = subprocess.run(
                command, env=_env(), stdout=log, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, check=False
            )
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    score.seconds = time.perf_counter() - start
    text = (run_dir.parent / f"{run_dir.name}.log").read_text(encoding="utf-8", errors="replace")
    if code is None:
        score.crash = f"timed out after {RUN_TIMEOUT_S} s"
        return score
    if code != 0 and not (TEARDOWN_MESSAGE in text and _all_ranks_ended(run_dir)):
        score.crash = f"exit code {code}: {text.strip().splitlines()[-1][:200] if text.strip() else ''}"
        return score
    try:
        diagnosis = diagnose(run_dir)
    except Exception as error:  # noqa: BLE001 - a crash of the analysis is what we count
        score.crash = f"diagnose raised {type(error).__name__}: {error}"
        return score
    confirmed = [f for f in diagnosis.findings if f.status == "confirmed"]
    score.confirmed = [f.id for f in confirmed]
    score.alerts = [f.id for f in confirmed if f.severity in ALERTS]
    expected_ids = {i for group in header.expect for i in group} | set(header.allow)
    score.detected = sum(1 for group in header.expect if set(group) & set(score.confirmed))
    score.false_alarms = [i for i in score.alerts if i not in expected_ids]
    return score


def format_table(scores: list[Score]) -> str:
    lines = [
        "| script | expected | confirmed (info in parentheses) | detected | false alarms | result |",
        "|---|---|---|---|---|---|",
    ]
    for s in scores:
        expected = ", ".join("|".join(g) for g in s.expected) or "— (clean)"
        found = ", ".join(i if i in s.alerts else f"({i})" for i in s.confirmed) or "—"
        if s.skipped:
            result = f"skipped ({s.skipped})"
        elif s.crash:
            result = f"CRASH ({s.crash})"
        else:
            result = "ok" if s.ok else "miss"
        lines.append(
            f"| {s.script} | {expected} | {found} | {s.detected}/{len(s.expected)} | "
            f"{', '.join(s.false_alarms) or '—'} | {result} |"
        )
    return "\n".join(lines)


def summary(scores: list[Score]) -> str:
    ran = [s for s in scores if not s.skipped]
    expected = sum(len(s.expected) for s in ran)
    detected = sum(s.detected for s in ran if not s.crash)
    clean = [s for s in ran if not s.expected]
    clean_alarms = [s for s in clean if s.false_alarms]
    alarms = sum(len(s.false_alarms) for s in ran)
    crashes = sum(1 for s in ran if s.crash)
    return (
        f"{len(ran)} scripts run ({len(scores) - len(ran)} skipped): detected {detected}/{expected} expected "
        f"findings; false alarms on clean scripts: {len(clean_alarms)}/{len(clean)} scripts; false alarms in "
        f"all scripts: {alarms}; crashes: {crashes}; fully right: {sum(s.ok for s in ran)}/{len(ran)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated script names; default all")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-zoo"))
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or sorted(p.name for p in ZOO.glob("*.py"))
    scores = []
    for name in names:
        run_dir = args.dir / Path(name).stem
        if run_dir.exists():
            import shutil

            shutil.rmtree(run_dir)
        score = score_script(ZOO / name, run_dir)
        scores.append(score)
        print(
            f"{name}: {'skipped' if score.skipped else 'crash' if score.crash else 'ok' if score.ok else 'miss'}"
            f" ({score.seconds:.0f} s) confirmed={score.confirmed}",
            flush=True,
        )
    print()
    print(format_table(scores))
    print()
    print(summary(scores))


if __name__ == "__main__":
    main()
