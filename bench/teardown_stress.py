"""Stress bench: how often does a complete 4-rank gloo run abort at interpreter teardown, with and
without the probe? (issue 10 item 1; results in docs/probe.md, "Teardown aborts")

A rank of a finished gloo job sometimes dies after its last step with "terminate called without an
active exception" (exit -6): a torch/gloo race at interpreter finalization (pytorch PR #179291), seen
with bare torchrun too. This bench measures both rates under the same load:

* the training script is a plain user script (an MLP, a DataLoader over a DistributedSampler, DDP,
  SGD, `destroy_process_group()` at the end, the model left as a module global), written to a
  temporary directory; every rank prints `DONE <rank>` after `destroy_process_group()`;
* each run is `python -m torch.distributed.run --nproc_per_node RANKS script.py`, bare or under
  `python -m ddp_doctor.cli run --out DIR --`, started with
  `subprocess.Popen(..., start_new_session=True, stdin=DEVNULL)` (as a job scheduler or a CI
  harness starts it);
* probe and bare runs alternate (probe first on even pairs, bare first on odd ones), so both see
  the same background load; `--load K` busy-loop processes add CPU contention for the whole bench;
* a run is `teardown_abort` when it exited non-zero, its output holds the teardown message, and every
  rank had printed DONE (training completed); `failed` when it exited non-zero otherwise; `timeout`
  when it ran past `--timeout`.

Output: one JSON line per run in OUT/runs.jsonl (written as it goes, so a partial bench is
readable), then a summary with abort rates and Wilson 95% intervals per mode in OUT/summary.json
and on stdout. `--deadline-min` stops starting new pairs after that many minutes.

    python bench/teardown_stress.py --pairs 60 --load 2 --out /tmp/teardown-bench --deadline-min 80
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.teardown_race import TEARDOWN_MESSAGE  # noqa: E402  (the repository root holds `tests`)

SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
data = TensorDataset(torch.randn(512, 32), torch.randn(512, 1))
sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=16, sampler=sampler)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps = int(os.environ.get("BENCH_STEPS", "8"))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        if i >= steps // 2:
            break
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
dist.destroy_process_group()
print(f"DONE {rank}", flush=True)
"""


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion k/n (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def fisher_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher exact p-value for the 2x2 table [[a, b], [c, d]]."""
    n1, n2, k = a + b, c + d, a + c

    def prob(x: int) -> float:
        return math.comb(n1, x) * math.comb(n2, k - x) / math.comb(n1 + n2, k)

    observed = prob(a)
    lo, hi = max(0, k - n2), min(k, n1)
    return min(1.0, sum(p for x in range(lo, hi + 1) if (p := prob(x)) <= observed * (1 + 1e-9)))


def _busy() -> None:
    while True:
        pass


def run_once(mode: str, script: Path, work: Path, index: int, ranks: int, timeout: float) -> dict:
    out_dir = work / f"{mode}-{index:03d}"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
    command = [*torchrun, str(script)]
    if mode == "probe":
        command = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(out_dir), "--", *command]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    start = time.time()
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
        text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        timed_out = True
    done = {int(r) for r in re.findall(r"DONE (\d+)", stdout)}  # rank output may interleave
    completed = done == set(range(ranks))
    if timed_out:
        outcome = "timeout"
    elif proc.returncode == 0:
        outcome = "ok"
    elif completed and TEARDOWN_MESSAGE in stderr + stdout:
        outcome = "teardown_abort"
    else:
        outcome = "failed"
    record = {
        "mode": mode,
        "index": index,
        "rc": proc.returncode,
        "outcome": outcome,
        "ranks_done": sorted(done),
        "seconds": round(time.time() - start, 1),
    }
    if outcome != "ok":
        record["stderr_tail"] = stderr[-1500:]
    if mode == "probe":  # the probe really recorded: ranks whose file ends with `end`
        record["probe_ranks_ended"] = _ranks_ended(out_dir)
        shutil.rmtree(out_dir, ignore_errors=True)
    return record


def _ranks_ended(run_dir: Path) -> int:
    ended = 0
    for f in sorted((run_dir / "ranks").glob("rank-*.jsonl")):
        lines = f.read_text(errors="replace").splitlines()
        ended += bool(lines) and '"kind":"end"' in lines[-1]
    return ended


def summarize(records: list[dict]) -> dict:
    summary: dict = {}
    for mode in ("probe", "bare"):
        rows = [r for r in records if r["mode"] == mode]
        n = len(rows)
        counts = {
            o: sum(r["outcome"] == o for r in rows) for o in ("ok", "teardown_abort", "failed", "timeout")
        }
        k = counts["teardown_abort"]
        lo, hi = wilson(k, n)
        summary[mode] = {"n": n, **counts, "abort_rate": k / n if n else None, "wilson95": [lo, hi]}
    p, b = summary["probe"], summary["bare"]
    summary["fisher_p_two_sided"] = fisher_two_sided(
        p["teardown_abort"], p["n"] - p["teardown_abort"], b["teardown_abort"], b["n"] - b["teardown_abort"]
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=50, help="probe+bare pairs (runs per mode)")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per run")
    parser.add_argument("--load", type=int, default=2, help="busy-loop processes for CPU contention")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("--deadline-min", type=float, default=None, help="start no new pair after this")
    parser.add_argument("--out", type=Path, default=Path("teardown-bench"))
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="teardown-bench-"))
    script = work / "train_mlp.py"
    script.write_text(SCRIPT)
    os.environ["BENCH_STEPS"] = str(args.steps)
    busy = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for p in busy:
        p.start()
    log = args.out / "runs.jsonl"
    records: list[dict] = []
    began = time.time()
    try:
        with log.open("a") as f:
            for pair in range(args.pairs):
                if args.deadline_min is not None and time.time() - began > args.deadline_min * 60:
                    print(f"deadline reached after {pair} pairs", flush=True)
                    break
                order = ("probe", "bare") if pair % 2 == 0 else ("bare", "probe")
                for mode in order:
                    record = run_once(mode, script, work, pair, args.ranks, args.timeout)
                    records.append(record)
                    f.write(json.dumps(record) + "\n")
                    f.flush()
                    print(
                        f"{mode:5s} {pair:3d} {record['outcome']:15s} rc={record['rc']} {record['seconds']}s",
                        flush=True,
                    )
    finally:
        for p in busy:
            p.terminate()
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize(records)
    summary["command"] = " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    summary["load_processes"] = args.load
    summary["cpus"] = os.cpu_count()
    summary["minutes"] = round((time.time() - began) / 60, 1)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
