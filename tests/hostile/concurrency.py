"""Area `concurrency`: runs and reports at the same time on one directory."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

from .harness import Config, Outcome, Try, execute, judge

# --- concurrency ---------------------------------------------------------------------------------------------------


def _concurrent_runs(t: Try, cfg: Config) -> list[str]:
    """Two `ddp-doctor run` into one --out, started together: one runs, the other is refused (exit 2)."""
    out = t.cwd / f"together-{t.name.split()[0]}"
    cmd = t.argv
    results: list[Outcome] = [None, None]  # type: ignore[list-item]

    def go(i: int) -> None:
        results[i] = execute(["run", "--out", str(out), "--", *cmd], t.cwd, cfg, timeout=300)

    threads = [threading.Thread(target=go, args=(i,)) for i in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    fails = []
    codes = sorted(o.code for o in results if o.code is not None)
    for o in results:
        fails += [f for f in judge(Try("concurrency", "", [], t.cwd, controls_ok=True), o, cfg)]
    if codes != [0, 2]:
        fails.append(f"silently wrong: exit codes {codes}, expected one run (0) and one refusal (2)")
    expect = t.runner_expect_steps  # type: ignore[attr-defined]
    if expect is None:  # a script without torch writes no rank file: the manifest must be one run's
        try:
            man = json.loads((out / "manifest.json").read_bytes())
            if man.get("command") != cmd:
                fails.append("silently wrong: the manifest is not the command's")
        except (OSError, ValueError) as exc:
            fails.append(f"manifest unreadable after two runs into one --out: {exc}")
        return fails
    rep = execute(["report", str(out), "--format", "json"], t.cwd, cfg)
    fails += judge(Try("concurrency", "", [], t.cwd, frozenset({0})), rep, cfg)
    if rep.code == 0:
        got = json.loads(rep.stdout)["run"]["optimizer_steps"]
        if got != expect:
            fails.append(
                f"silently wrong: {got} optimizer steps after two runs into one --out, expected {expect}"
            )
    return fails


def _concurrent_reports(t: Try, cfg: Config) -> list[str]:
    """Four `report`s of one run at the same time (each may write the cache): all succeed, same answer."""
    outs: list[Outcome] = [None] * 4  # type: ignore[list-item]

    def go(i: int) -> None:
        outs[i] = execute(t.argv, t.cwd, cfg, timeout=180)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    fails = [f for o in outs for f in judge(Try("concurrency", "", [], t.cwd, frozenset({0})), o, cfg)]
    steps = {json.loads(o.stdout)["run"]["optimizer_steps"] for o in outs if o.code == 0}
    if len(steps) > 1:
        fails.append(f"silently wrong: concurrent reports disagree on optimizer_steps: {sorted(steps)}")
    return fails


def concurrency_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "concurrency"
    root.mkdir(parents=True, exist_ok=True)
    sleep = [sys.executable, "-c", "import time; time.sleep(3)"]
    tries = []
    for i in range(1 if cfg.quick else 5):
        t = Try(
            "concurrency",
            f"s{i} two runs of a sleeping script into one --out",
            sleep,
            root,
            runner=_concurrent_runs,
        )
        t.runner_expect_steps = None  # type: ignore[attr-defined]
        tries.append(t)
    if not cfg.quick:
        trainer = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "ddp_doctor.trainer",
                   "--preset", "tiny", "--steps", "4", "--no-progress"]  # fmt: skip
        t = Try(
            "concurrency", "t0 two 2-rank trainer runs into one --out", trainer, root, runner=_concurrent_runs
        )
        t.runner_expect_steps = 4  # type: ignore[attr-defined]
        tries.append(t)
        big = cfg.work / "reader" / "big-run-cached"
        if big.is_dir():
            r = root / "big"
            shutil.copytree(big, r, symlinks=True)
            shutil.rmtree(r / ".ddp-doctor-cache", ignore_errors=True)
            tries.append(Try("concurrency", "four reports of one big run at once (cache writes race)",
                             ["report", str(r), "--format", "json"], root, runner=_concurrent_reports))  # fmt: skip
    r = root / "small"
    shutil.copytree(base, r, symlinks=True)
    tries.append(Try("concurrency", "four reports of one run at once", ["report", str(r), "--format", "json"], root,
                     runner=_concurrent_reports))  # fmt: skip
    return tries
