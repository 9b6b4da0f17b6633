"""Show a plan: a text report (rich), a compact one-row-per-strategy table, or JSON.

JSON schema `ddp-doctor.plan/1` (documented in docs/plan.md). Memory figures are GiB (2^30 bytes),
as GPUs are sold and as nvidia-smi reports them; communication volumes are GB (10^9 bytes).
"""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from ddp_doctor.plan.advice import Alternative, Applies, PlanWarning
from ddp_doctor.plan.planner import CUDA_OVERHEAD_BYTES, FRAGMENTATION, Setup, StrategyPlan
from ddp_doctor.plan.run_coverage import Coverage, coverage

PLAN_SCHEMA = "ddp-doctor.plan/1"
GIB = 2**30

# (JSON key, label) of each memory component, in the order shown.
MEMORY_ROWS: tuple[tuple[str, str], ...] = (
    ("weights", "weights"),
    ("grads", "gradients"),
    ("optimizer", "optimizer states"),
    ("activations", "activations (as planned)"),
    ("activations_no_ckpt", "  without checkpointing"),
    ("activations_ckpt", "  with checkpointing"),
    ("logits_transient", "logits (transient)"),
    ("comm_buffers", "comm buffers"),
    ("cuda_overhead", "CUDA context/workspaces"),
    ("fragmentation", "allocator slack"),
)


def to_json(
    setup: Setup,
    plans: list[StrategyPlan],
    warnings: list[PlanWarning],
    hypotheses: list[Applies],
    alternatives: list[Alternative],
) -> dict[str, Any]:
    m = setup.model
    return {
        "schema": PLAN_SCHEMA,
        "setup": {
            "model": {
                "name": m.name,
                "parameters": m.num_parameters(),
                "layers": m.num_hidden_layers,
                "hidden_size": m.hidden_size,
                "intermediate_size": m.intermediate_size,
                "heads": m.num_attention_heads,
                "kv_heads": m.num_key_value_heads,
                "vocab_size": m.vocab_size,
            },
            "gpu": {
                "name": setup.gpu.name,
                "memory_gib": setup.gpu.memory_gib,
                "bf16": setup.gpu.bf16,
                "source": setup.gpu.source,
            },
            "gpus_per_node": setup.gpus_per_node,
            "nodes": setup.nodes,
            "world_size": setup.world,
            "seq_len": setup.seq_len,
            "precision": setup.precision,
            "checkpointing": setup.checkpointing,
            "offload": setup.offload,
            "lora_rank": setup.lora_rank,
            "global_batch_target": setup.global_batch,
        },
        "assumptions": {
            "mfu": setup.mfu,
            "node_network_gbps": setup.node_network_gbps,
            "cuda_overhead_gib": CUDA_OVERHEAD_BYTES / GIB,
            "fragmentation": FRAGMENTATION,
            "optimizer": "Adam/AdamW",
        },
        "strategies": [_strategy_json(p, setup) for p in plans],
        "warnings": [{"code": w.code, "severity": w.severity, "message": w.message} for w in warnings],
        "hypotheses": [
            {"id": h.hypothesis, "findings": list(h.findings), "reason": h.reason} for h in hypotheses
        ],
        "alternatives": [{"flags": a.flags, "fits": a.fits} for a in alternatives],
        "run_coverage": [
            {
                "setup": c.setup,
                "engine": c.engine,
                "diagnosable": c.diagnosable,
                "measured": c.measured,
                "missed": c.missed,
            }
            for c in run_coverage(setup, plans, alternatives)
        ],
    }


def run_coverage(setup: Setup, plans: list[StrategyPlan], alternatives: list[Alternative]) -> list[Coverage]:
    """What `ddp-doctor run` measures on the strategies shown and the flags used or suggested."""
    flags = {word for a in alternatives for word in a.flags.split() if word.startswith("--")}
    used = (
        ("--offload", setup.offload),
        ("--checkpointing", setup.checkpointing),
        ("--lora-rank", setup.lora_rank),
    )
    flags |= {flag for flag, on in used if on}
    return coverage([p.strategy for p in plans], flags)


def _strategy_json(p: StrategyPlan, setup: Setup) -> dict[str, Any]:
    memory = {key: round(getattr(p.memory, key) / GIB, 3) for key, _ in MEMORY_ROWS}
    memory["total"] = round(p.memory.total / GIB, 3)
    return {
        "strategy": p.strategy,
        "fits": p.fits,
        "micro_batch": p.micro_batch,
        "max_micro_batch": p.max_micro_batch,
        "max_micro_batch_checkpointing": p.max_micro_batch_ckpt,
        "accumulation": p.accum,
        "global_batch": {"samples": p.global_batch_samples, "tokens": p.global_batch_tokens},
        "memory_gib": memory,
        "cpu_offload_gib_per_node": round(p.memory.cpu_offload * setup.gpus_per_node / GIB, 3),
        "step_time_s": {
            "compute": p.time.compute_s,
            "communication": p.time.comm_s,
            "overlapped": p.time.overlapped_s,
            "serial": p.time.serial_s,
        },
        "pflops_per_step": p.flops_per_step / 1e15,
        "comm_gb_per_step": p.comm_bytes_per_step / 1e9,
    }


def render_json(
    setup: Setup,
    plans: list[StrategyPlan],
    warnings: list[PlanWarning],
    hypotheses: list[Applies],
    alternatives: list[Alternative],
) -> str:
    return json.dumps(to_json(setup, plans, warnings, hypotheses, alternatives), indent=2)


def _console(width: int) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=width, no_color=True, highlight=False, markup=False), buf


def _header(setup: Setup) -> str:
    m = setup.model
    extra = [f"LoRA r={setup.lora_rank}"] if setup.lora_rank else []
    extra += ["checkpointing"] if setup.checkpointing else []
    extra += ["offload"] if setup.offload else []
    return (
        f"{m.name} ({m.num_parameters() / 1e9:.2f}B parameters) on {setup.world} × {setup.gpu.name} "
        f"({setup.gpu.memory_gib:g} GiB; {setup.nodes} node(s)), seq {setup.seq_len}, "
        f"{setup.precision}" + "".join(f", {e}" for e in extra)
    )


def _batch(p: StrategyPlan, ckpt: bool = False) -> str:
    best = p.max_micro_batch_ckpt if ckpt else p.max_micro_batch
    return str(best) if best else "none fits"


def render_table(setup: Setup, plans: list[StrategyPlan], width: int = 120) -> str:
    console, buf = _console(width)
    table = Table(title=_header(setup), title_justify="left")
    for col in (
        "strategy",
        "GiB/GPU",
        "fits",
        "max micro-batch",
        "with ckpt",
        "micro×accum",
        "step s",
        "comm GB/step",
    ):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for p in plans:
        table.add_row(
            p.strategy,
            f"{p.memory.total / GIB:.1f}",
            "yes" if p.fits else "NO",
            _batch(p),
            _batch(p, ckpt=True),
            f"{p.micro_batch}×{p.accum}",
            f"{p.time.overlapped_s:.2f}",
            f"{p.comm_bytes_per_step / 1e9:.1f}",
        )
    console.print(table)
    return buf.getvalue()


def render_text(
    setup: Setup,
    plans: list[StrategyPlan],
    warnings: list[PlanWarning],
    hypotheses: list[Applies],
    alternatives: list[Alternative],
    width: int = 120,
) -> str:
    console, buf = _console(width)
    console.print(_header(setup))
    micro = {p.micro_batch for p in plans}
    console.print(f"Memory per GPU (GiB) at micro-batch {', '.join(map(str, sorted(micro)))}:")
    table = Table()
    table.add_column("component")
    for p in plans:
        table.add_column(p.strategy, justify="right")
    for key, label in MEMORY_ROWS:
        table.add_row(label, *(f"{getattr(p.memory, key) / GIB:.2f}" for p in plans))
    table.add_row("total", *(f"{p.memory.total / GIB:.2f}" for p in plans), style="bold")
    table.add_row("fits", *("yes" if p.fits else "NO" for p in plans))
    table.add_row("largest micro-batch", *(_batch(p) for p in plans))
    table.add_row("  with checkpointing", *(_batch(p, ckpt=True) for p in plans))
    table.add_row("micro-batch × accum", *(f"{p.micro_batch}×{p.accum}" for p in plans))
    table.add_row("global batch (samples)", *(str(p.global_batch_samples) for p in plans))
    table.add_row("global batch (tokens)", *(f"{p.global_batch_tokens:,}" for p in plans))
    table.add_row("compute s/step", *(f"{p.time.compute_s:.2f}" for p in plans))
    table.add_row("comm GB/step/rank", *(f"{p.comm_bytes_per_step / 1e9:.1f}" for p in plans))
    table.add_row("comm s/step", *(f"{p.time.comm_s:.2f}" for p in plans))
    if setup.offload:
        table.add_row(
            "CPU RAM per node (GiB)",
            *(f"{p.memory.cpu_offload * setup.gpus_per_node / GIB:.1f}" for p in plans),
        )
    console.print(table)
    console.print(
        f"Step time from 6·N·tokens + attention FLOPs at MFU {setup.mfu:.0%} of "
        f"{setup.gpu.peak_flops(setup.precision) / 1e12:g} TFLOPS ({setup.precision}); "
        f"allocator slack {FRAGMENTATION:.0%} of dynamic memory and "
        f"{CUDA_OVERHEAD_BYTES / GIB:g} GiB CUDA overhead are assumptions. Formulas: docs/plan.md."
    )
    if warnings:
        console.print("\nWarnings:")
        for w in warnings:
            console.print(f"  [{w.severity}] {w.message}")
    if alternatives:
        console.print("\nWhat would fit (strategy: largest micro-batch):")
        for a in alternatives:
            fits = ", ".join(f"{s}: {b}" for s, b in a.fits.items()) or "nothing"
            console.print(f"  {a.flags}: {fits}")
    console.print("\nHypotheses that apply to this setup (catalog IDs; `ddp-doctor run` measures them):")
    for h in hypotheses:
        console.print(f"  {h.hypothesis or '(ungrouped)'}: watch {', '.join(h.findings)} — {h.reason}")
    console.print("\nWhat `ddp-doctor run` can diagnose on these setups:")
    for c in run_coverage(setup, plans, alternatives):
        console.print(f"  {c.setup} ({c.engine}): {c.diagnosable} — measured: {c.measured}")
        if c.missed:
            console.print(f"    `run` cannot diagnose: {c.missed}")
    return buf.getvalue()
