"""Are DDP, its knobs, ZeRO-1, FSDP2 and torch.compile numerically equivalent on this torch build?

`verify` runs the reference trainer's one-optimizer-step API (`loop.build`, `train_step`) for k
optimizer steps under several configurations on a real gloo process group of N CPU ranks, and
compares the gradients of the last step and the parameters after k steps with a reference:

* DDP(N ranks, A micro-steps, no_sync) vs ONE process on the same global batch (the N·A
  micro-batches the DDP ranks saw, fed to `train_step` in one process). With the loss normalised
  by the global valid-token count (loop.py) both compute grad(Σ CE / N_tokens) exactly.
* sync on every micro-step, bucket_cap_mb, gradient_as_bucket_view, find_unused_parameters,
  ZeRO-1 and FSDP2 vs DDP; eager vs eager (the run-to-run noise) and, on request, compile vs
  eager judged against that noise.
* Known-broken variants (replica-desync, per-microbatch-mean-loss with variable document
  lengths, loss-unscaled) must FAIL: they show that the comparison is sensitive enough.

Difference of two tensor sets a (variant) and b (reference), over all parameters:
    max_abs = max |a − b|,   rel = max_abs / max |b|
Relative to the largest magnitude rather than elementwise, so near-zero entries do not blow up.
Clipping is turned off (clip=None): it rescales gradients to a fixed norm and would hide a scale
error such as loss-unscaled. Replicas: under DDP every rank must hold bit-identical parameters;
`replica_spread` is the max |θ_rank − θ_rank0| over ranks (0.0 expected).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ddp_doctor.core.catalog import Text
from ddp_doctor.core.findings import Finding

if TYPE_CHECKING:  # torch and the trainer are imported where the measurement runs
    import torch

    from ddp_doctor.trainer.config import TrainConfig

# fp32 tolerance on rel. Reordering a sum of n float32 terms changes it by at most about
# n·u·Σ|x| (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §4.2), u = 2^-24 ≈ 6e-8;
# with n ≈ 1e3 terms per gradient entry (tokens × micro-steps × ranks) that is ≲ 1e-4 of the largest
# magnitude. Measured on tiny (2 ranks, A=2, k=2): equivalent variants stay below 1e-6, broken ones
# are above 1e-3 (docs/experiments.md).
FP32_REL_TOL = 1e-4
# compile vs eager: "beyond the eager run-to-run noise" = more than NOISE_FACTOR × that noise, with
# the fp32 reordering bound above as the floor (eager on CPU is usually bit-reproducible: noise 0).
NOISE_FACTOR = 10.0

Expect = Literal["equal", "differ"]


@dataclass(frozen=True)
class Variant:
    """One configuration of the reference trainer, compared with `reference` (another variant)."""

    name: str
    label: str  # the row as shown in the table
    overrides: dict[str, Any]  # TrainConfig fields changed from the verify base config
    reference: str  # "single" (one process, global batch) or another variant's name
    expect: Expect = "equal"
    judged_against_noise: bool = False  # tolerance from the eager-vs-eager row (compile)


@dataclass
class VerifyConfig:
    """What `ddp-doctor verify` runs: world size, accumulation, model and length of the check."""

    world: int = 2
    accum: int = 2
    preset: str = "tiny"
    steps: int = 2  # optimizer steps k
    micro_batch: int = 2
    seq_len: int = 32
    compile: bool = False  # add the compile-vs-eager row (slow on CPU: ~50 s cold)
    only: tuple[str, ...] = ()  # run only these variant names (plus what they are compared with)

    def base_overrides(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "steps": self.steps,
            "accum": self.accum,
            "micro_batch": self.micro_batch,
            "seq_len": self.seq_len,
            "clip": None,
            "progress": False,
            "fault_step": 0,
        }


def variants(cfg: VerifyConfig) -> list[Variant]:
    """The rows of the table, in order."""
    rows = [
        Variant(
            "ddp",
            f"DDP({cfg.world} ranks, accum {cfg.accum}, no_sync) vs 1 process, global batch",
            {},
            "single",
        ),
        Variant("eager-repeat", "eager vs eager (run-to-run noise)", {}, "ddp"),
        Variant(
            "sync-every-micro", "sync every micro-step vs no_sync", {"faults": ("sync-every-micro",)}, "ddp"
        ),
        Variant("bucket-small", "bucket_cap_mb=0.25 vs 25", {"bucket_cap_mb": 0.25}, "ddp"),
        Variant(
            "bucket-view", "gradient_as_bucket_view=True vs False", {"gradient_as_bucket_view": True}, "ddp"
        ),
        Variant(
            "find-unused", "find_unused_parameters=True vs False", {"find_unused_parameters": True}, "ddp"
        ),
        Variant("zero1", "ZeRO-1 (ZeroRedundancyOptimizer) vs DDP", {"strategy": "zero1"}, "ddp"),
        Variant("fsdp2", "FSDP2 (fully_shard) vs DDP", {"strategy": "fsdp"}, "ddp"),
    ]
    if cfg.compile:
        rows.append(
            Variant(
                "compile",
                "compile (after DDP) vs eager",
                {"compile": "after_ddp"},
                "ddp",
                judged_against_noise=True,
            )
        )
    rows += [
        Variant(
            "replica-desync",
            "known-broken: replica-desync vs 1 process",
            {"faults": ("replica-desync",)},
            "single",
            expect="differ",
        ),
        Variant(
            "per-microbatch-mean",
            "known-broken: per-micro-batch mean loss (variable lengths)",
            {"faults": ("per-microbatch-mean-loss",)},
            "single",
            expect="differ",
        ),
        Variant(
            "loss-unscaled",
            "known-broken: loss not divided by accum",
            {"faults": ("loss-unscaled",)},
            "single",
            expect="differ",
        ),
    ]
    if cfg.only:
        wanted = set(cfg.only)
        unknown = wanted - {v.name for v in rows}
        if unknown:
            raise ValueError(
                f"unknown verify row(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(v.name for v in rows)}"
            )
        for v in rows:
            if v.name in wanted and v.reference != "single":
                wanted.add(v.reference)
            if v.judged_against_noise:
                wanted.add("eager-repeat")
        wanted.add("ddp")  # the single-process reference is fed the batches the DDP run saw
        rows = [v for v in rows if v.name in wanted]
    return rows


@dataclass
class Row:
    """One measured comparison."""

    name: str
    label: str
    reference: str
    expect: Expect
    grad_max_abs: float
    grad_rel: float
    param_max_abs: float
    param_rel: float
    replica_spread: float | None  # None where replicas do not exist (FSDP2 shards)
    tolerance: float
    verdict: Literal["equal", "differ"]
    as_expected: bool

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class VerifyResult:
    config: VerifyConfig
    rows: list[Row] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.as_expected for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "ddp-doctor.verify/1",
            "config": dataclasses.asdict(self.config),
            "ok": self.ok,
            "rows": [r.to_json() for r in self.rows],
            "findings": [f.to_report_json() | {"source": f.source} for f in self.findings],
        }


# --- measurement (imports torch) -----------------------------------------------------------


def _train_config(cfg: VerifyConfig, variant: Variant) -> TrainConfig:
    from ddp_doctor.trainer.config import TrainConfig

    return TrainConfig(**(cfg.base_overrides() | variant.overrides))


def _full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor on every rank (FSDP2 keeps DTensor shards)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _worker(
    rank: int, world: int, init_file: str, cfg: VerifyConfig, rows: list[Variant], out_dir: str
) -> None:
    """One rank: run every distributed variant for k steps; rank 0 saves grads and params."""
    import torch
    import torch.distributed as dist

    from ddp_doctor.trainer.loop import build, next_micro_batches, train_step

    torch.set_num_threads(1)  # N ranks share the cores
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        for variant in rows:
            state = build(_train_config(cfg, variant))
            seen = []
            for _ in range(cfg.steps):
                batches = next_micro_batches(state)
                seen.append(batches)
                train_step(state, batches)
            if variant.name == "ddp":
                torch.save(seen, Path(out_dir) / f"batches-{rank}.pt")
            named = [(n, p) for n, p in state.raw_model.named_parameters() if p.requires_grad]
            grads = {n: _full(p.grad).detach().clone() for n, p in named if p.grad is not None}
            params = {n: _full(p.detach()).clone() for n, p in named}
            spread = None
            if variant.overrides.get("strategy") != "fsdp":
                flat = torch.cat([p.detach().reshape(-1) for _, p in named])
                ref = flat.clone()
                dist.broadcast(ref, src=0)
                diff = (flat - ref).abs().max().reshape(1)
                dist.all_reduce(diff, op=dist.ReduceOp.MAX)
                spread = float(diff)
            if rank == 0:
                torch.save(
                    {"grads": grads, "params": params, "replica_spread": spread},
                    Path(out_dir) / f"{variant.name}.pt",
                )
            dist.barrier()
    finally:
        dist.destroy_process_group()


def _single_process_reference(cfg: VerifyConfig, out_dir: Path) -> None:
    """One process, no process group, fed every rank's micro-batches of each step (global batch)."""
    import torch

    from ddp_doctor.trainer.loop import build, train_step

    per_rank = [torch.load(out_dir / f"batches-{r}.pt") for r in range(cfg.world)]
    state = build(_train_config(cfg, Variant("single", "", {}, "single")))
    for step in range(cfg.steps):
        train_step(state, [b for rank_batches in per_rank for b in rank_batches[step]])
    named = [(n, p) for n, p in state.raw_model.named_parameters() if p.requires_grad]
    torch.save(
        {
            "grads": {n: p.grad.detach().clone() for n, p in named if p.grad is not None},
            "params": {n: p.detach().clone() for n, p in named},
            "replica_spread": None,
        },
        out_dir / "single.pt",
    )


def max_diff(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float]:
    """(max |a − b|, max |a − b| / max |b|) over the tensors of both dicts; a missing key is inf."""
    if set(a) != set(b):
        return float("inf"), float("inf")
    max_abs, scale = 0.0, 0.0
    for name, ref in b.items():
        max_abs = max(max_abs, float((a[name].double() - ref.double()).abs().max()))
        scale = max(scale, float(ref.double().abs().max()))
    return max_abs, (max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf")))


def compare(rows: list[Variant], saved: dict[str, dict[str, Any]]) -> list[Row]:
    """The table: each variant vs its reference, with tolerance and verdict."""
    noise = 0.0
    out: list[Row] = []
    for v in rows:
        got, ref = saved[v.name], saved[v.reference]
        g_abs, g_rel = max_diff(got["grads"], ref["grads"])
        p_abs, p_rel = max_diff(got["params"], ref["params"])
        if v.name == "eager-repeat":
            noise = max(g_rel, p_rel)
        tolerance = max(FP32_REL_TOL, NOISE_FACTOR * noise) if v.judged_against_noise else FP32_REL_TOL
        spread = got["replica_spread"]
        equal = g_rel <= tolerance and p_rel <= tolerance and not spread
        verdict: Literal["equal", "differ"] = "equal" if equal else "differ"
        out.append(
            Row(
                name=v.name,
                label=v.label,
                reference=v.reference,
                expect=v.expect,
                grad_max_abs=g_abs,
                grad_rel=g_rel,
                param_max_abs=p_abs,
                param_rel=p_rel,
                replica_spread=spread,
                tolerance=tolerance,
                verdict=verdict,
                as_expected=verdict == v.expect,
            )
        )
    return out


def findings_from(rows: list[Row]) -> list[Finding]:
    """Catalog findings the table decides (source="experiment")."""
    by_name = {r.name: r for r in rows}
    out: list[Finding] = []

    def evidence(*names: str) -> dict[str, Any]:
        return {
            n: {
                "grad_rel": by_name[n].grad_rel,
                "param_rel": by_name[n].param_rel,
                "tolerance": by_name[n].tolerance,
            }
            for n in names
            if n in by_name
        }

    if "compile" in by_name:
        row = by_name["compile"]
        noise = by_name["eager-repeat"]
        confirmed = row.verdict == "differ"
        out.append(
            Finding(
                id="compile-numerics",
                status="confirmed" if confirmed else "ruled-out",
                severity="warning" if confirmed else "info",
                source="experiment",
                summary=Text(
                    f"compiled vs eager: gradients differ by {row.grad_rel:.2e} and parameters by "
                    f"{row.param_rel:.2e} (relative) after the checked steps; eager run-to-run noise "
                    f"{max(noise.grad_rel, noise.param_rel):.2e}, threshold {row.tolerance:.1e}.",
                    f"编译与 eager 对比：检查的步数之后梯度相差 {row.grad_rel:.2e}，参数相差 {row.param_rel:.2e}"
                    f"（相对）；eager 两次运行之间的噪声 {max(noise.grad_rel, noise.param_rel):.2e}，"
                    f"阈值 {row.tolerance:.1e}。",
                ),
                evidence=evidence("compile", "eager-repeat") | {"threshold": row.tolerance},
            )
        )
    bucket = [n for n in ("bucket-small", "bucket-view") if n in by_name]
    if bucket:
        worst = max(max(by_name[n].grad_rel, by_name[n].param_rel) for n in bucket)
        differ = any(by_name[n].verdict == "differ" for n in bucket)
        out.append(
            Finding(
                id="ddp-bucket-config",
                status="confirmed" if differ else "ruled-out",
                severity="info",
                source="experiment",
                summary=Text(
                    f"bucket_cap_mb and gradient_as_bucket_view variations change gradients and "
                    f"parameters by at most {worst:.2e} (relative; tolerance {FP32_REL_TOL:.0e}).",
                    f"改变 bucket_cap_mb 和 gradient_as_bucket_view 使梯度和参数最多变化 {worst:.2e}"
                    f"（相对；容差 {FP32_REL_TOL:.0e}）。",
                ),
                evidence=evidence(*bucket) | {"threshold": FP32_REL_TOL},
            )
        )
    if "find-unused" in by_name:
        row = by_name["find-unused"]
        out.append(
            Finding(
                id="find-unused-true",
                status="confirmed" if row.verdict == "differ" else "ruled-out",
                severity="info",
                source="experiment",
                summary=Text(
                    f"find_unused_parameters=True changes gradients by {row.grad_rel:.2e} and "
                    f"parameters by {row.param_rel:.2e} (relative; tolerance {FP32_REL_TOL:.0e}): "
                    "it costs time, not accuracy.",
                    f"find_unused_parameters=True 使梯度变化 {row.grad_rel:.2e}，参数变化 {row.param_rel:.2e}"
                    f"（相对；容差 {FP32_REL_TOL:.0e}）：它只耗时间，不影响精度。",
                ),
                evidence=evidence("find-unused") | {"threshold": FP32_REL_TOL},
            )
        )
    return out


def run_verify(cfg: VerifyConfig) -> VerifyResult:
    """Measure every row on a real gloo group of `cfg.world` CPU ranks and compare."""
    import torch
    import torch.multiprocessing as mp

    if cfg.world < 2:
        raise ValueError("verify needs --world >= 2 (it compares DDP with one process)")
    rows = variants(cfg)
    with tempfile.TemporaryDirectory(prefix="ddp-doctor-verify-") as tmp:
        out_dir = Path(tmp)
        init_file = str(out_dir / "init")
        env_before = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = "1"
        try:
            mp.spawn(_worker, args=(cfg.world, init_file, cfg, rows, tmp), nprocs=cfg.world, join=True)
        finally:
            if env_before is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = env_before
        _single_process_reference(cfg, out_dir)
        saved = {p.stem: torch.load(p) for p in out_dir.glob("*.pt") if not p.stem.startswith("batches-")}
    table = compare(rows, saved)
    return VerifyResult(config=cfg, rows=table, findings=findings_from(table))
