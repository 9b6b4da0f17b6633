"""What does one `ddp-doctor watch` refresh cost on a long run? (src/ddp_doctor/watch/)

A synthetic run (tests/fixtures/synth_run.py: the probe's own record encoder, default 4 ranks)
is written with STEPS + ROUNDS steps, then copied into a live directory up to step STEPS. A
watcher catches up once, then each round appends the lines of the next optimizer step to every
rank file and refreshes: tail (read the new lines, append their columns), diagnose (every check
on the accumulated in-memory run), render (the live view, to a string). Side by side, in the same
process on the same directory, the naive alternative a polling loop would pay per refresh: read
the whole run again (`read_run`, no cache: the files keep changing, so the cache never hits) and
diagnose it. Prints the median and max wall time of each part over the rounds, the CPU time of a
whole refresh (what it costs without the waits of a loaded machine) and the ratios: compare the
two columns, not the numbers across machines.

    python bench/watch.py [--ranks 4] [--steps 10000] [--rounds 20] [--dir /tmp/ddp-doctor-bench-watch]

``--record SVG`` instead records the live view of a real run for docs/watch.md: the reference
trainer (2 gloo ranks, ``--fault lr-too-high``) under `ddp-doctor run`, followed by a watcher in
this process; the frame drawn right after the first confirmed finding is exported with rich's
``Console(record=True).export_svg`` (the final frame when nothing was confirmed).

    python bench/watch.py --record docs/watch.svg [--record-steps 60]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fixtures.synth_run import SynthSpec, write_run  # noqa: E402
from rich.console import Console  # noqa: E402

from ddp_doctor.analysis.diagnose import diagnose_run  # noqa: E402
from ddp_doctor.rundir import records  # noqa: E402
from ddp_doctor.rundir.reader import read_run  # noqa: E402
from ddp_doctor.watch import view  # noqa: E402
from ddp_doctor.watch.actions import Actions  # noqa: E402
from ddp_doctor.watch.follow import Watcher  # noqa: E402

STEP_PREFIX = records.line_prefix("step")


def split_at_steps(data: bytes, first: int) -> list[bytes]:
    """The file's bytes: [everything before step ``first``'s line, then one piece per later step]."""
    lines = data.split(b"\n")[:-1]
    pieces: list[list[bytes]] = [[]]
    for line in lines:
        if line.startswith(STEP_PREFIX) and json.loads(line)["step"] >= first:
            pieces.append([])
        pieces[-1].append(line)
    return [b"".join(x + b"\n" for x in p) for p in pieces]


CPU: dict[str, list[float]] = {}


def timed(fn, key: str | None = None):  # type: ignore[no-untyped-def]
    """``fn()`` and its wall time; its CPU time (this process) is kept under ``key``."""
    c, t = time.process_time(), time.perf_counter()
    out = fn()
    if key is not None:
        CPU.setdefault(key, []).append(time.process_time() - c)
    return out, time.perf_counter() - t


def record(svg: Path, steps: int) -> None:
    """Follow a real run and export one frame of the live view as SVG (see the module docstring)."""
    run = Path(tempfile.mkdtemp(prefix="ddp-doctor-watch-rec-")) / "run"
    cmd = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(run), "--every", "10", "--"]
    cmd += [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    cmd += ["-m", "ddp_doctor.trainer", "--steps", str(steps), "--accum", "2", "--micro-batch", "2"]
    cmd += ["--fault", "lr-too-high", "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    with open(run.parent / "job.log", "w") as log:
        job = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        watcher = Watcher(run, Actions(run))
        frame: Console | None = None
        while True:
            changes = watcher.refresh()
            console = Console(
                record=True, width=120, force_terminal=True, color_system="truecolor", file=io.StringIO()
            )
            console.print(view.render(watcher))
            confirmed = any(c.kind == "finding" and c.new == "confirmed" for c in changes)
            if frame is None and (confirmed or watcher.ended):
                frame = console
            if watcher.ended or (job.poll() is not None and watcher.run is None):
                break
            time.sleep(1.0)
        job.wait()
    assert frame is not None, f"no frame recorded; see {run.parent / 'job.log'}"
    frame.save_svg(
        str(svg), title=f"ddp-doctor watch (a real 2-rank run, {steps} steps, --fault lr-too-high)"
    )
    print(f"wrote {svg} (the run: {run}, exit code {job.returncode})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ddp-doctor-bench-watch"))
    ap.add_argument("--record", type=Path, metavar="SVG", help="record the live view of a real run instead")
    ap.add_argument("--record-steps", type=int, default=60)
    args = ap.parse_args()
    if args.record:
        record(args.record, args.record_steps)
        return
    src = args.dir / f"src-r{args.ranks}-s{args.steps + args.rounds}"
    if not src.exists():
        write_run(src, SynthSpec(world_size=args.ranks, steps=args.steps + args.rounds, ended=False))
    live = args.dir / "live"
    shutil.rmtree(live, ignore_errors=True)
    (live / records.RANKS_DIR).mkdir(parents=True)
    shutil.copy(records.manifest_path(src), records.manifest_path(live))
    pieces = {}
    for path in sorted((src / records.RANKS_DIR).iterdir()):
        pieces[path.name] = split_at_steps(path.read_bytes(), args.steps)
        (live / records.RANKS_DIR / path.name).write_bytes(pieces[path.name][0])
    size = sum(len(b) for p in pieces.values() for b in p) / 2**20
    watcher = Watcher(live, Actions(live))
    _, catch_up = timed(watcher.refresh)
    console = Console(file=io.StringIO(), width=140, force_terminal=True)
    parts: dict[str, list[float]] = {
        k: [] for k in ("tail", "diagnose", "render", "refresh", "noop", "naive")
    }
    for i in range(1, args.rounds + 1):
        for name, p in pieces.items():
            with open(live / records.RANKS_DIR / name, "ab") as fh:
                fh.write(p[i] if i < len(p) else b"")
        _, total = timed(watcher.refresh, "refresh")
        parts["diagnose"].append(watcher.last_diagnose_s)
        parts["tail"].append(watcher.last_refresh_s - watcher.last_diagnose_s)
        _, r = timed(lambda: console.print(view.render(watcher)), "render")
        parts["render"].append(r)
        parts["refresh"].append(total + r)
        _, noop = timed(watcher.refresh)  # nothing new: no diagnosis
        parts["noop"].append(noop)
        _, naive = timed(lambda: diagnose_run(read_run(live, use_cache=False)), "naive")
        parts["naive"].append(naive)
    load = os.getloadavg()[0]
    print(
        f"{args.ranks} ranks × {args.steps:,} steps ({size:.1f} MiB of rank files), {args.rounds} rounds of one "
        f"new step per rank; load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"first refresh (catch up on the whole run): {catch_up:.2f} s")
    print(f"{'per refresh':<44} {'median s':>9} {'max s':>7}")
    labels = {
        "tail": "watch: read new lines + append columns",
        "diagnose": "watch: diagnose accumulated run",
        "render": "watch: render live view",
        "refresh": "watch: whole refresh (the three above)",
        "noop": "watch: refresh with nothing new",
        "naive": "naive: read_run (no cache) + diagnose",
    }
    for k, label in labels.items():
        print(f"{label:<44} {statistics.median(parts[k]):>9.3f} {max(parts[k]):>7.3f}")
    ratio = statistics.median(parts["naive"]) / statistics.median(parts["refresh"])
    print(f"naive / watch refresh (wall medians): {ratio:.1f}×")
    # CPU time does not count the waits for a core a loaded machine adds to the wall time
    watch_cpu = statistics.median(a + b for a, b in zip(CPU["refresh"], CPU["render"]))
    naive_cpu = statistics.median(CPU["naive"])
    print(
        f"CPU s per refresh (medians): watch {watch_cpu:.3f}, naive {naive_cpu:.3f} ({naive_cpu / watch_cpu:.1f}×)"
    )


if __name__ == "__main__":
    main()
