"""Where a cold rollup report's CPU goes, per rank and phase: one process, workers off, timers around
the rollup path's functions (docs/report.md, "Rollups and scale").

    python bench/rollup_phases.py RUN                      # this tree
    PYTHONPATH=OLD/src python bench/rollup_phases.py RUN   # another commit's (git archive REF src)

RUN is a run directory with a rollup index (bench/report.py writes them; its caches are removed
before and after). Printed: CPU milliseconds per rank (``time.process_time``: user + sys of this
process, so what the workers would spend is counted here too) of the index pass, the reduce and
selection, the windows (the worker function; inside it the parse, the conversion to columns, the
check against the index and the windows cache written), the windows cache read back by the parent,
and the analysis. Phases that an implementation does not have are not printed. Compare two
implementations in one invocation of the shell, one after the other: CPU seconds move with the
machine's load.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

PHASES = (  # (module, function, label): the first found of a label's functions is timed
    ("rollup_read", "_index_all", "1 index pass"),
    ("rollup_read", "reduce", "2 reduce"),
    ("rollup_read", "select", "2 selection"),
    ("rollup_read", "_read_windows_batch", "3 windows (the workers' function)"),
    ("rollup_read", "_read_windows", "3 windows (the workers' function)"),
    ("rollup_read", "parse_rank_bytes", "3a parse: line scan, JSON (Arrow), checks"),
    ("rollup_read", "to_columns_many", "3b conversion to columns"),
    ("rollup_read", "to_columns", "3b conversion to columns"),
    ("rollup_read", "_mismatch", "3c checked against the index"),
    ("rollup_read", "save_cache", "3d windows cache written"),
    ("rollup_read", "load_cache", "4 windows cache read back (parent)"),
    ("diagnose", "sample_context", "5a the even sample's context"),
)


def main() -> None:
    os.cpu_count = lambda: 1  # workers off: every phase runs (and is timed) in this process
    from ddp_doctor.analysis import diagnose
    from ddp_doctor.rundir import rollup_read
    from ddp_doctor.rundir.reader import read_run

    modules = {"rollup_read": rollup_read, "diagnose": diagnose}
    spent: dict[str, float] = {}
    timed: set[str] = set()
    for mod_name, fn_name, label in PHASES:
        mod = modules[mod_name]
        if label in timed or not hasattr(mod, fn_name):
            continue
        timed.add(label)
        setattr(mod, fn_name, _timer(getattr(mod, fn_name), label, spent))
    run = Path(sys.argv[1])
    ranks = len(list((run / "ranks").glob("rank-*.jsonl")))
    cache = run / ".ddp-doctor-cache"
    shutil.rmtree(cache, ignore_errors=True)
    t0 = time.process_time()
    data = read_run(run, rollups="on")
    t1 = time.process_time()
    diagnose.diagnose_run(data)
    t2 = time.process_time()
    shutil.rmtree(cache, ignore_errors=True)
    spent["0 read (all of phases 1-4)"] = t1 - t0
    spent["5 analysis (diagnose_run)"] = t2 - t1
    print(f"{ddp_doctor_src()}: {ranks} ranks, CPU ms per rank, load {os.getloadavg()[0]:.1f}")
    for label in sorted(spent):
        print(f"  {label:44s} {spent[label] / ranks * 1e3:7.2f}")
    print(f"  {'total':44s} {(t2 - t0) / ranks * 1e3:7.2f}")


def _timer(fn: Any, label: str, spent: dict[str, float]) -> Any:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - t

    return timed


def ddp_doctor_src() -> str:
    import ddp_doctor

    return str(Path(ddp_doctor.__file__).parent.parent)


if __name__ == "__main__":
    main()
