"""`ddp-doctor plan`: memory, batch, step time and applicable hypotheses for a setup, per strategy."""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path

import typer

from ddp_doctor.cli_common import check_output, fail, write_output
from ddp_doctor.core.terminal import safe
from ddp_doctor.plan.throughput import DEFAULT_MFU, DEFAULT_NODE_NETWORK_GBPS  # plain arithmetic, no torch


class StrategyChoice(str, Enum):
    ddp = "ddp"
    zero1 = "zero1"
    zero2 = "zero2"
    zero3 = "zero3"
    fsdp = "fsdp"
    all = "all"


class PrecisionChoice(str, Enum):
    fp32 = "fp32"
    fp16 = "fp16"
    bf16 = "bf16"


class FormatChoice(str, Enum):
    text = "text"
    table = "table"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add `plan` to the root app."""
    app.command("plan")(plan_command)


def plan_command(
    model: str = typer.Option(
        ...,
        "--model",
        help="Preset (tiny, small, llama-7b, llama-13b, "
        "llama-70b, llama3-8b) or a HF LLaMA-style config.json path.",
    ),
    gpus: int = typer.Option(..., "--gpus", min=1, help="GPUs per node."),
    gpu: str | None = typer.Option(
        None, "--gpu", help="GPU name from the table (v100-32gb, a100-80gb, h100-80gb, h200, ...)."
    ),
    gpu_mem: float | None = typer.Option(
        None, "--gpu-mem", min=1, help="GPU memory in GiB (overrides the table's)."
    ),
    nodes: int = typer.Option(1, "--nodes", min=1),
    seq_len: int = typer.Option(2048, "--seq-len", min=1),
    micro_batch: int | None = typer.Option(
        None, "--micro-batch", min=1, help="Default: the largest that fits."
    ),
    accum: int | None = typer.Option(None, "--accum", min=1, help="Default: from --global-batch, else 1."),
    global_batch: int | None = typer.Option(
        None, "--global-batch", min=1, help="Target samples per optimizer step."
    ),
    precision: PrecisionChoice | None = typer.Option(
        None, "--precision", help="Default: bf16 where the GPU has it, else fp16."
    ),
    strategy: StrategyChoice = typer.Option(StrategyChoice.all, "--strategy"),
    checkpointing: bool = typer.Option(False, "--checkpointing", help="Per-layer activation checkpointing."),
    offload: bool = typer.Option(
        False,
        "--offload",
        help="Optimizer states (ZeRO-2: and gradients; ZeRO-3/FSDP: and weights) in CPU memory.",
    ),
    lora_rank: int = typer.Option(
        0, "--lora-rank", min=0, help="LoRA on q_proj, v_proj (0: full fine-tune)."
    ),
    mfu: float = typer.Option(
        DEFAULT_MFU, "--mfu", min=0.01, max=1.0, help="Assumed model FLOPs utilisation."
    ),
    node_network_gbps: float = typer.Option(
        DEFAULT_NODE_NETWORK_GBPS,
        "--node-network-gbps",
        min=0.1,
        help="Inter-node bandwidth per node, GB/s.",
    ),
    fmt: FormatChoice = typer.Option(FormatChoice.text, "--format"),
    output: Path | None = typer.Option(None, "--output", help="Write here instead of stdout."),
) -> None:
    """Will this model fit, at what micro-batch, with which strategy — before renting GPUs."""
    check_output(output)
    from ddp_doctor.plan import advice, render
    from ddp_doctor.plan.hardware import get_gpu
    from ddp_doctor.plan.memory import STRATEGIES
    from ddp_doctor.plan.model import load_model
    from ddp_doctor.plan.planner import Setup, plan

    try:
        for flag, value in (("--mfu", mfu), ("--node-network-gbps", node_network_gbps)):
            if not math.isfinite(value):  # click's range has no upper bound here: inf got through
                raise ValueError(f"{flag} must be a finite number, got {value}")
        spec = load_model(model)
        hw = get_gpu(gpu, gpu_mem)
    except ValueError as err:
        fail(str(err))
    chosen, precision_warnings = advice.resolve_precision(
        precision.value if precision else None, hw.bf16, hw.name
    )
    setup = Setup(
        model=spec,
        gpu=hw,
        gpus_per_node=gpus,
        nodes=nodes,
        seq_len=seq_len,
        micro_batch=micro_batch,
        accum=accum,
        global_batch=global_batch,
        precision=chosen,
        checkpointing=checkpointing,
        offload=offload,
        lora_rank=lora_rank,
        mfu=mfu,
        node_network_gbps=node_network_gbps,
    )
    strategies = STRATEGIES if strategy is StrategyChoice.all else (strategy.value,)
    plans = plan(setup, strategies)
    warnings = precision_warnings + advice.warnings(setup, plans)
    hypotheses = advice.applicable_hypotheses(setup, plans)
    alternatives = advice.alternatives(setup, plans)
    if fmt is FormatChoice.json:
        text = render.render_json(setup, plans, warnings, hypotheses, alternatives) + "\n"
    elif fmt is FormatChoice.table:
        text = render.render_table(setup, plans)
    else:
        text = render.render_text(setup, plans, warnings, hypotheses, alternatives)
    if output:
        write_output(output, text)
    else:
        typer.echo(text if fmt is FormatChoice.json else safe(text), nl=False)  # names from config.json
