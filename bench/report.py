"""Benchmark `ddp-doctor report` on large synthetic runs: old code and new side by side, cold and warm.

    python bench/report.py                                   # the table of docs/report.md ("Scale")
    python bench/report.py --sizes 8x100000 --old REF        # one shape, against another commit
    python bench/report.py --ranks 8 --steps 100000 --no-old # one shape, this tree only
    python bench/report.py --sweep --no-old                  # the scaling sweep (ranks 8…1,024, steps 12.5k…100k)

Run directories are written once by tests/fixtures/synth_run.py — through ddp_doctor.rundir.records,
the probe's own record check and encoder, so the bytes are what the probe writes — and reused while
their shape is unchanged (DIR/rR-sN). A run wider than 1,024 ranks is *widened* from the 1,024-rank
run of the same length (:func:`widen_run`): rank r's step lines are the bytes of rank r mod 1,024,
its header and `config` records are re-encoded with its own rank and the new world size (generating
4,096 × 2,000 from scratch takes ~45 min of CPU on this box; widening takes seconds). Its ranks
therefore share input hashes four by four — the data-order check reports that, which costs what
any data-order finding costs.

For each shape, each implementation in turn — the old code (``git archive REF src`` into
DIR/old-REF, run with PYTHONPATH pointing at it) and this tree — runs `ddp-doctor report --format
json` in a fresh process twice: cold (column cache removed: every rank file parsed, the cache
written) and warm (cache present). Printed per run: wall time, CPU time (user + sys of the report
process and its parser workers: what the report costs whatever else the machine is doing), the
peak resident memory of the whole process tree (sampled every 20 ms), and the 1-minute load
average (`uptime`) before and after. Ratios new/old are side by side on the same machine state.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

# The tree before the reader's parallel, bounded-memory scan (issue 26 part 2): the "old" column.
OLD_DEFAULT = "59bd455"
SIZES_DEFAULT = "8x100000,1024x2000,4096x2000"
WIDEN_FROM = 1024


def ensure_run(path: Path, ranks: int, steps: int, accum: int) -> Path:
    from fixtures.synth_run import SynthSpec, write_run

    shape = {"ranks": ranks, "steps": steps, "accum": accum, "writer": 2}
    marker = path / "bench-shape.json"
    if marker.exists() and json.loads(marker.read_text()) == shape:
        return path
    if path.exists():
        shutil.rmtree(path)
    t = time.perf_counter()
    if ranks > WIDEN_FROM:
        base = ensure_run(path.parent / f"r{WIDEN_FROM}-s{steps}", WIDEN_FROM, steps, accum)
        widen_run(base, path, ranks)
    else:
        write_run(
            path,
            SynthSpec(
                world_size=ranks,
                steps=steps,
                accum=accum,
                every=500,
                steps_per_epoch=1000,
                tau=steps / 5,
                faults=("loss-spike",),
            ),
        )
    marker.write_text(json.dumps(shape))
    print(f"generated {path} in {time.perf_counter() - t:.1f} s", flush=True)
    return path


def widen_run(base: Path, out: Path, ranks: int) -> None:
    """A run of ``ranks`` ranks from ``base``: rank r's step lines are rank (r mod base ranks)'s
    bytes; every other record is decoded and re-encoded (rundir/records.py) with rank r and the new
    world size where it names them."""
    from ddp_doctor.rundir import records

    src = sorted((base / records.RANKS_DIR).glob("rank-*.jsonl"))
    (out / records.RANKS_DIR).mkdir(parents=True)
    manifest = json.loads(records.manifest_path(base).read_text())
    manifest["env"] = {**manifest.get("env", {}), "WORLD_SIZE": str(ranks)}
    manifest["ranks"] = ranks
    records.manifest_path(out).write_text(json.dumps(manifest, indent=1))
    prefix = records.line_prefix("step")
    for r in range(ranks):
        lines = src[r % len(src)].read_bytes().splitlines(keepends=True)
        with open(records.rank_file(out, r), "wb") as fh:
            for line in lines:
                if not line.startswith(prefix):
                    rec = json.loads(line)
                    for k, v in (("rank", r), ("world_size", ranks), ("local_rank", r % 8)):
                        if k in rec:
                            rec[k] = v
                    line = records.encode(records.check(rec))
                fh.write(line)


@dataclass
class Timing:
    wall: float
    cpu: float
    rss_gb: float


def timed_report(run: Path, env: dict[str, str]) -> Timing:
    """Wall seconds, CPU seconds and peak RSS (GB, summed over the process tree) of one `report`."""
    cmd = [sys.executable, "-m", "ddp_doctor.cli", "report", str(run), "--format", "json", "-o", os.devnull]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, env=env)
    peak = 0
    ps = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [ps, *ps.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"report failed with exit code {proc.returncode}")
    return Timing(wall, _children_cpu(), peak / 1e9)


_cpu_seen = 0.0


def _children_cpu() -> float:
    """CPU seconds of the children reaped since the last call (they include their own workers)."""
    global _cpu_seen
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    delta, _cpu_seen = total - _cpu_seen, total
    return delta


def implementations(old: str | None, where: Path) -> list[tuple[str, dict[str, str]]]:
    """(name, environment) of each implementation: the old commit's src (exported once) and this tree."""
    out = []
    if old:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", old], check=True, capture_output=True, text=True
        ).stdout.strip()
        src = where / f"old-{commit}"
        if not (src / "src" / "ddp_doctor").is_dir():
            src.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", commit, "src"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        out.append((f"old {commit}", _env(src / "src")))
    out.append(("new", _env(ROOT / "src")))
    for name, env in out:  # byte-compile once, so neither pays compilation inside the timing
        subprocess.run([sys.executable, "-m", "compileall", "-q", env["PYTHONPATH"]], env=env, check=False)
        probe = "import ddp_doctor, sys; print(ddp_doctor.__file__)"
        got = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout
        if not got.startswith(env["PYTHONPATH"]):
            raise SystemExit(f"{name}: ddp_doctor imported from {got.strip()}, not {env['PYTHONPATH']}")
    return out


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": str(src)}


def bench(run: Path, ranks: int, steps: int, impls: list[tuple[str, dict[str, str]]]) -> list[str]:
    from ddp_doctor.rundir.records import CACHE_DIR, RANKS_DIR

    size = sum(f.stat().st_size for f in (run / RANKS_DIR).glob("*.jsonl"))
    print(f"run: {ranks} ranks × {steps} steps, {size / 1e6:.0f} MB", flush=True)
    rows = []
    for name, env in impls:
        shutil.rmtree(run / CACHE_DIR, ignore_errors=True)
        _children_cpu()
        load0 = os.getloadavg()[0]
        cold = timed_report(run, env)
        warm = timed_report(run, env)
        load1 = os.getloadavg()[0]
        print(
            f"  {name}: cold {cold.wall:.1f} s (CPU {cold.cpu:.1f} s, peak RSS {cold.rss_gb:.2f} GB), "
            f"warm {warm.wall:.2f} s (CPU {warm.cpu:.2f} s, peak RSS {warm.rss_gb:.2f} GB), "
            f"load {load0:.1f}–{load1:.1f}",
            flush=True,
        )
        rows.append(
            f"| {ranks:,} × {steps:,} | {size / 1e6:,.0f} | {name} | {cold.wall:.1f} | {cold.cpu:.1f} | "
            f"{cold.rss_gb:.2f} | {warm.wall:.2f} | {warm.cpu:.2f} | {warm.rss_gb:.2f} | {load0:.1f}–{load1:.1f} |"
        )
    shutil.rmtree(run / CACHE_DIR, ignore_errors=True)  # the next user of the directory starts cold
    return rows


def rollups_row() -> str:
    """1,024 × 100,000 from rollups: measured once the rollup writer is on this tree."""
    try:
        import ddp_doctor.rundir.rollups  # noqa: F401
    except ImportError:
        return (
            "| 1,024 × 100,000 (rollups) | — | new | not measured: the rollup writer (issue 26 part 1, "
            "branch rollups) is not on this tree | | | | | | |"
        )
    return (
        "| 1,024 × 100,000 (rollups) | — | new | not measured: bench/report.py does not generate a "
        "rollup run yet | | | | | | |"
    )


# --sweep: ranks at a fixed number of steps, and steps at a fixed number of ranks
SWEEP = [(r, 2000) for r in (8, 64, 256, 1024)] + [(8, n) for n in (12_500, 25_000, 50_000, 100_000)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=SIZES_DEFAULT, help="RANKSxSTEPS,... (default %(default)s)")
    ap.add_argument("--ranks", type=int, help="one shape: ranks (with --steps)")
    ap.add_argument("--steps", type=int, help="one shape: steps (with --ranks)")
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-bench"))
    ap.add_argument("--old", default=OLD_DEFAULT, help="the commit to compare with (default %(default)s)")
    ap.add_argument("--no-old", action="store_true", help="this tree only")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--sweep", action="store_true", help="the scaling sweep (runs in DIR/rR-sN)")
    args = ap.parse_args()
    if args.sweep:
        shapes = SWEEP
    elif args.ranks or args.steps:
        shapes = [(args.ranks or 8, args.steps or 100_000)]
    else:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]  # type: ignore[misc]
    impls = [] if args.generate_only else implementations(None if args.no_old else args.old, args.dir)
    rows = []
    for ranks, steps in shapes:
        run = ensure_run(args.dir / f"r{ranks}-s{steps}", ranks, steps, args.accum)
        if impls:
            rows.extend(bench(run, ranks, steps, impls))
    if rows:
        if not (args.sweep or args.ranks or args.steps):
            rows.append(rollups_row())
        print(f"\n{os.cpu_count()} cores; load = 1-minute load average before–after each pair of reports")
        print(
            "| ranks × steps | rank files (MB) | code | cold s | cold CPU s | cold peak RSS (GB) "
            "| warm s | warm CPU s | warm peak RSS (GB) | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
