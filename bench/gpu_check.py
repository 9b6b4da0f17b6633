"""GPU readiness: on a CUDA machine with NCCL, does the probe keep training bit-identical, and what
does it cost? One command, one JSON summary.

For every configuration — fp32 eager, bf16 autocast, fp16 autocast with GradScaler, and
`torch.compile(DDP(model))` with inductor — the same small DDP training (Linear, LayerNorm,
BatchNorm: parameters *and* buffers; fixed data) runs bare under torchrun and under
`ddp-doctor run --level basic|full`, interleaved. Each rank writes the sha256 of its final
state_dict (and the GradScaler's scale), its step times measured with CUDA events (after the
warm-up steps) and `torch.cuda.max_memory_allocated`. The summary holds, per configuration:
digests equal bare vs probed on every rank (the fidelity verdict), exit codes, the ratio of
median step times probed / bare per level (goal: basic <= 1.03x, full <= 1.10x) and the peak
device memory bare vs probed.

Without CUDA or NCCL it writes `{"skipped": "<reason>"}` and exits 0, so it can run anywhere;
`--allow-cpu` runs the same matrix on CPU with gloo (no CUDA events: wall clock per step) to
check the script itself where no GPU is lent.

    python bench/gpu_check.py [--out gpu_check.json] [--nproc N] [--steps 40] [--warmup 10]
                              [--configs fp32,bf16,fp16,compile] [--levels basic,full] [--repeats 2]
                              [--every 10] [--allow-cpu]

The worker (`--worker`, started by torchrun) is this same file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONFIGS = ("fp32", "bf16", "fp16", "compile")
LEVELS = ("basic", "full")
GOALS = {"basic": 1.03, "full": 1.10}
RUN_TIMEOUT_S = 900


# --- the worker: one rank of the training ---------------------------------------------------------
def worker(out_dir: Path, config: str, steps: int, warmup: int) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    cuda = torch.cuda.is_available() and os.environ.get("GPU_CHECK_CPU") != "1"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)
    width = 1024 if cuda else 64
    model = nn.Sequential(
        nn.Linear(width, width),
        nn.LayerNorm(width),
        nn.ReLU(),
        nn.Linear(width, width),
        nn.BatchNorm1d(width),
    ).to(device)
    ddp = DDP(model, device_ids=[local] if cuda else None)
    net: Any = torch.compile(ddp) if config == "compile" else ddp
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(config)
    scaler = torch.amp.GradScaler(device.type, enabled=config == "fp16")
    gen = torch.Generator(device=device).manual_seed(1 + rank)
    batch = 64 if cuda else 8
    times: list[float] = []
    for _ in range(steps):
        x = torch.randn(batch, width, device=device, generator=gen)
        y = torch.randn(batch, width, device=device, generator=gen)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        else:
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = nn.functional.mse_loss(net(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if cuda:
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            times.append((time.perf_counter() - t0) * 1e3)
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    digest.update(repr(scaler.get_scale() if scaler.is_enabled() else None).encode())
    result = {
        "rank": rank,
        "digest": digest.hexdigest(),
        "step_ms": times[warmup:],
        "max_allocated": torch.cuda.max_memory_allocated(device) if cuda else None,
    }
    (out_dir / f"rank-{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


# --- the driver: the matrix, interleaved -----------------------------------------------------------
def _skip_reason(allow_cpu: bool) -> str | None:
    try:
        import torch
        import torch.distributed as dist
    except ImportError as error:
        return f"torch not importable ({error})"
    if allow_cpu:
        return None
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    if not (dist.is_available() and dist.is_nccl_available()):
        return "torch.distributed has no NCCL backend"
    return None


def _one(arm: str, config: str, args: argparse.Namespace, tmp: Path, n: int) -> dict[str, Any]:
    out = tmp / f"{config}-{arm}-{n}"
    out.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if args.allow_cpu:
        env["GPU_CHECK_CPU"] = "1"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={args.nproc}",
        str(Path(__file__).resolve()),
        "--worker",
        str(out),
        config,
        str(args.steps),
        str(args.warmup),
    ]
    if arm != "bare":
        run_dir = tmp / f"run-{config}-{arm}-{n}"
        probe = ["run", "--out", str(run_dir), "--level", arm, "--every", str(args.every)]
        command = [sys.executable, "-m", "ddp_doctor.cli", *probe, "--", *command]
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    ranks = sorted((json.loads(p.read_text()) for p in out.glob("rank-*.json")), key=lambda r: int(r["rank"]))
    return {
        "arm": arm,
        "exit_code": proc.returncode,
        "wall_s": time.perf_counter() - started,
        "ranks": ranks,
        # the ranks' own error lines (torchrun's traceback of ChildFailedError says only that one failed)
        "stderr_tail": "\n".join(
            line for line in proc.stderr.splitlines() if line.startswith("[rank") and "Error" in line
        )[-1500:]
        if proc.returncode
        else "",
    }


def _median_ms(runs: list[dict[str, Any]]) -> float | None:
    times = [t for run in runs for rank in run["ranks"] for t in rank["step_ms"]]
    return statistics.median(times) if times else None


def _summarise(config: str, runs: list[dict[str, Any]], levels: list[str]) -> dict[str, Any]:
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_arm.setdefault(run["arm"], []).append(run)
    bare = by_arm.get("bare", [])
    reference = [r["digest"] for r in bare[0]["ranks"]] if bare else []
    out: dict[str, Any] = {"bare_median_ms": _median_ms(bare), "levels": {}}
    bare_mem = max((r["max_allocated"] or 0 for run in bare for r in run["ranks"]), default=0)
    for level in levels:
        probed = by_arm.get(level, [])
        digests_equal = bool(reference) and all(
            [r["digest"] for r in run["ranks"]] == reference for run in probed
        )
        median = _median_ms(probed)
        base = out["bare_median_ms"]
        mem = max((r["max_allocated"] or 0 for run in probed for r in run["ranks"]), default=0)
        out["levels"][level] = {
            "digests_equal": digests_equal,
            "exit_codes": [run["exit_code"] for run in probed],
            "median_ms": median,
            "ratio": median / base if median and base else None,
            "goal": GOALS.get(level),
            "max_allocated_bare": bare_mem or None,
            "max_allocated_probed": mem or None,
            "failures": [run["stderr_tail"] for run in probed if run["exit_code"]],
        }
    out["bare_exit_codes"] = [run["exit_code"] for run in bare]
    out["bare_repeatable"] = len({tuple(r["digest"] for r in run["ranks"]) for run in bare}) <= 1
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    parser.add_argument("--nproc", type=int, default=0, help="ranks (default: every visible GPU, at least 1)")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--levels", default=",".join(LEVELS))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--every", type=int, default=10, help="`ddp-doctor run --every` (as bench/overhead.py)"
    )
    parser.add_argument("--allow-cpu", action="store_true", help="run on CPU/gloo to test this script")
    args = parser.parse_args()
    reason = _skip_reason(args.allow_cpu)
    if reason is not None:
        args.out.write_text(json.dumps({"skipped": reason}, indent=1) + "\n")
        print(f"gpu_check: skipped: {reason} (wrote {args.out})")
        return 0
    import torch

    if args.nproc <= 0:
        args.nproc = max(1, torch.cuda.device_count()) if not args.allow_cpu else 2
    configs = [c for c in args.configs.split(",") if c]
    levels = [lv for lv in args.levels.split(",") if lv]
    summary: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0)
        if torch.cuda.is_available() and not args.allow_cpu
        else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None,
        "nproc": args.nproc,
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "every": args.every,
        "command": " ".join(sys.argv),
        "configs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for config in configs:
            runs = [
                _one(arm, config, args, Path(tmp), n)
                for n in range(args.repeats)
                for arm in ("bare", *levels)  # interleaved: load drift hits every arm alike
            ]
            summary["configs"][config] = _summarise(config, runs, levels)
            print(
                f"gpu_check: {config}: {json.dumps(summary['configs'][config]['levels'])[:400]}", flush=True
            )
    summary["fidelity_ok"] = all(
        lv["digests_equal"] and not any(lv["exit_codes"])
        for cfg in summary["configs"].values()
        for lv in cfg["levels"].values()
    )
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"gpu_check: fidelity {'ok' if summary['fidelity_ok'] else 'DIFFERS'}; summary in {args.out}")
    return 0 if summary["fidelity_ok"] else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(main())
