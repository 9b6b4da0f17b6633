"""Hostile-input matrix: an outside tester's count of tries and failures per area (issue 10).

Every try runs the real command line (`python -m ddp_doctor.cli ...`) as a subprocess, in its own
session, with a wall-clock timeout, RLIMIT_AS / RLIMIT_FSIZE / no core files (set with prlimit), and its peak RSS read
from ``wait4``. The inputs are made here, from the documented formats (docs/run-format.md,
docs/lint.md, docs/plan.md) and from real runs of the reference trainer — not from the unit tests'
fixtures. A try FAILS when any of these holds:

* a Python traceback on stdout/stderr, or an exit code outside {0, 1, 2} (or outside the codes the
  try expects, e.g. 2 for "not a run", 0 for a damaged run that still has data), or death by signal;
* it ran past the timeout (a hang: FIFOs, /dev/zero, symlink loops), or its peak RSS passed the limit;
* silently wrong, where an oracle exists: damage an independent line parser can see (a line that is
  not a JSON object, a truncated last line, a FIFO/loop/directory where a file belongs) but no
  problem listed (`run.problems`, the "Data quality" section); duplicate steps counted twice; a
  schema it does not know read as one it does; stdout of `--format json` that is not JSON;
* an output followed a symlink (the planted target's bytes changed);
* raw control characters (C0 except \\t \\n, lone \\r, DEL, C1) on stdout/stderr — and, for the
  escape tries, the injected payloads on a pseudo-terminal;
* a secret given on the command line or in the environment appears in any file the tool wrote.

    python -m tests.hostile.matrix --quick              # CI-sized subset (tests/hostile/test_matrix.py)
    python -m tests.hostile.matrix --out /tmp/hm        # the full matrix: table on stdout,
                                                        # every try in OUT/tries.jsonl

Areas, one module each in tests/hostile/: reader, compare, lint, plan, outputs, escapes, concurrency,
secrets (harness.py: running and judging a try). Results: docs/reliability.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .compare import compare_tries
from .concurrency import concurrency_tries
from .escapes import escape_tries
from .harness import AREAS, Config, Try, _rmtree, make_real_run, run_try
from .lint import lint_tries
from .locked import locked_tries
from .outputs import output_tries
from .plan import plan_tries
from .reader import _live_polls, _sigkilled_rank, import_tries, reader_tries
from .secrets import secret_tries

# --- the matrix ----------------------------------------------------------------------------------------------------------


def build(cfg: Config, areas: tuple[str, ...]) -> list[Try]:
    base = make_real_run(cfg.work / "base", world=2, steps=12)
    tries: list[Try] = []
    if "reader" in areas:
        tries += reader_tries(base, cfg) + import_tries(cfg)
        if not cfg.quick:
            full = make_real_run(cfg.work / "base-full", world=2, steps=12, level="full")
            single = make_real_run(cfg.work / "base-single", world=1, steps=12)
            for b in (full, single):
                sub = Config(
                    **{
                        **cfg.__dict__,
                        "work": cfg.work / f"{b.name}-tries",
                        "quick": True,
                        "seed": cfg.seed + len(b.name),
                    }
                )
                sub.work.mkdir(exist_ok=True)
                more = reader_tries(b, sub)
                for t in more:
                    t.name = f"{b.name}: {t.name}"
                tries += more
        if not cfg.quick:
            live = cfg.work / "live"
            live.mkdir()
            tries.append(Try("reader", "a real run polled from start to end", [], live, runner=_live_polls))
            tries.append(
                Try("reader", "a real run with rank 1 SIGKILLed mid-run", [], live, runner=_sigkilled_rank)
            )
    if "compare" in areas:
        if "reader" not in areas:
            reader_tries(base, cfg)
        tries += compare_tries(base, cfg)
    if "lint" in areas:
        tries += lint_tries(cfg)
    if "plan" in areas:
        tries += plan_tries(cfg)
    if "outputs" in areas:
        tries += output_tries(base, cfg)
    if "escapes" in areas:
        tries += escape_tries(base, cfg)
    if "concurrency" in areas:
        tries += concurrency_tries(base, cfg)
    if "secrets" in areas:
        tries += secret_tries(cfg)
    if os.geteuid() != 0 or shutil.which("setpriv"):  # file modes must be enforced to try these
        tries += [t for t in locked_tries(base, cfg) if t.area in areas]
    return tries


def run_matrix(
    cfg: Config, areas: tuple[str, ...] = AREAS, log: Path | None = None, only: tuple[str, ...] = ()
) -> list[dict[str, object]]:
    cfg.work.mkdir(parents=True, exist_ok=True)
    cfg.work.chmod(0o755)
    tries = build(cfg, areas)
    if only:
        tries = [t for t in tries if any(o in t.name for o in only)]
    # runs (and the reports of what they wrote) one after the other, after the read-only tries
    sequential = [t for t in tries if t.runner is not None or t.argv[:1] == ["run"] or t.area == "secrets"]
    parallel = [t for t in tries if t not in sequential]
    results: list[dict[str, object]] = []
    with open(log or os.devnull, "w") as fh:

        def record(res: dict[str, object]) -> None:
            results.append(res)
            fh.write(json.dumps(res) + "\n")
            fh.flush()

        with concurrent.futures.ThreadPoolExecutor(cfg.jobs) as pool:
            for res in pool.map(lambda t: run_try(t, cfg), parallel):
                record(res)
        for t in sequential:
            record(run_try(t, cfg))
    return results


def table(results: list[dict[str, object]]) -> str:
    rows = ["| area | tries | failures |", "|---|---:|---:|"]
    total = [0, 0]
    for area in AREAS:
        rs = [r for r in results if r["area"] == area]
        if not rs:
            continue
        bad = sum(1 for r in rs if r["failures"])
        rows.append(f"| {area} | {len(rs)} | {bad} |")
        total[0] += len(rs)
        total[1] += bad
    rows.append(f"| **all** | **{total[0]}** | **{total[1]}** |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the CI-sized subset")
    ap.add_argument("--out", type=Path, default=None, help="work directory (default: a new temporary one)")
    ap.add_argument("--areas", default=",".join(AREAS), help=f"comma-separated subset of {','.join(AREAS)}")
    ap.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per command before it counts as a hang"
    )
    ap.add_argument("--rss-mb", type=float, default=1500.0, help="peak RSS above this is a memory failure")
    ap.add_argument("--as-mb", type=float, default=6144.0, help="RLIMIT_AS of every command")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument(
        "--only", action="append", default=[], help="only tries whose name contains this (repeatable)"
    )
    args = ap.parse_args(argv)
    areas = tuple(a for a in args.areas.split(",") if a)
    unknown = set(areas) - set(AREAS)
    if unknown:
        ap.error(f"unknown areas {sorted(unknown)}")
    work = args.out or Path(tempfile.mkdtemp(prefix="hostile-matrix-"))
    if args.out and work.exists() and any(work.iterdir()):
        ap.error(f"--out {work} is not empty")
    cfg = Config(args.quick, work, args.timeout, args.rss_mb, args.as_mb, args.jobs, args.seed)
    t0 = time.monotonic()
    results = run_matrix(cfg, areas, work / "tries.jsonl", tuple(args.only))
    print(table(results))
    for r in results:
        if r["failures"]:
            print(f"FAIL [{r['area']}] {r['name']}: {'; '.join(r['failures'])}")  # type: ignore[arg-type]
    print(f"{len(results)} tries in {time.monotonic() - t0:.0f} s; every try: {work / 'tries.jsonl'}")
    (work / "summary.md").write_text(table(results) + "\n")
    if not args.keep and args.out is None:
        _rmtree(work)
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
