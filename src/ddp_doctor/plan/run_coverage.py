"""`plan` and `run` agree: what `ddp-doctor run` measures on each setup `plan` may recommend.

Every strategy of memory.STRATEGIES and every flag `plan` may suggest (`--offload`,
`--checkpointing`, `--lora-rank`) has one row here: `diagnosable` is "yes" when the checks of
`ddp-doctor report` run on it as on DDP, "partly" when some are not measured (`missed` says which
and why). `plan` prints the rows of the setups it shows (text: a section; JSON: `run_coverage`),
so a user who follows a recommendation knows, before launching, what the probe will not see.
The same facts, per launcher and engine: docs/probe.md, "Launchers and engines × what is measured".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ddp_doctor.plan.memory import STRATEGIES

Diagnosable = Literal["yes", "partly", "no"]


@dataclass(frozen=True)
class Coverage:
    setup: str  # a strategy name, or a flag: "--offload", "--checkpointing", "--lora-rank"
    engine: str  # what the user runs for it
    diagnosable: Diagnosable
    measured: str
    missed: str  # "" when nothing the checks need is missing


_ZERO_MEASURED = (
    "micro-steps and the root each backward starts from (loss / GAS, without the fp16 loss scale), "
    "gradient reductions per micro-step (deepspeed.comm), lr, fp16 skipped steps and loss scale, "
    "the engine's global gradient norm and its clipping, data order, loss-function outputs"
)
_ZERO_MISSED = (
    "per-rank (local) gradient norms, so the gradient noise scale (batch-below-noise-scale); the "
    "unused-parameter report, update/parameter ratios and `--level full` statistics (gradients and "
    "updated weights live in the engine's partitions)"
)

COVERAGE: dict[str, Coverage] = {
    "ddp": Coverage(
        "ddp",
        "torch DistributedDataParallel",
        "yes",
        "micro-steps, losses, sync pattern (DDP comm hook), local and global gradient norms, gradient "
        "noise scale, clipping, GradScaler, lr, data order, replica checksums, unused parameters",
        "",
    ),
    "zero1": Coverage(
        "zero1", "DeepSpeed ZeRO stage 1", "partly", _ZERO_MEASURED + ", replica checksums", _ZERO_MISSED
    ),
    "zero2": Coverage(
        "zero2",
        "DeepSpeed ZeRO stage 2",
        "partly",
        _ZERO_MEASURED
        + " (reductions on every micro-step are ZeRO-2's design, not a finding), replica checksums",
        _ZERO_MISSED,
    ),
    "zero3": Coverage(
        "zero3",
        "DeepSpeed ZeRO stage 3",
        "partly",
        _ZERO_MEASURED,
        _ZERO_MISSED + "; replica checksums (parameters are partitioned)",
    ),
    "fsdp": Coverage(
        "fsdp",
        "FSDP2 fully_shard, FSDP1 FullyShardedDataParallel, HSDP",
        "yes",
        "micro-steps, losses, reduce-scatter calls as sync, local gradient norms and per-shard global "
        "norms (combined across ranks), clipping incl. fsdp-clip-wrong, GradScaler, lr, data order",
        "",
    ),
    "--offload": Coverage(
        "--offload",
        "DeepSpeed offload_optimizer / FSDP1 CPUOffload",
        "partly",
        "as the strategy it modifies (the engine's measurements do not change; the offload device is "
        "recorded in config/deepspeed or config/fsdp)",
        "the offloaded optimizer step's CPU time and host memory (not diagnostic checks), plus what "
        "its strategy misses",
    ),
    "--checkpointing": Coverage(
        "--checkpointing",
        "activation checkpointing (torch.utils.checkpoint, HF gradient_checkpointing_enable)",
        "yes",
        "as the strategy it modifies: the re-entrant backward calls it makes are not counted as micro-steps",
        "",
    ),
    "--lora-rank": Coverage(
        "--lora-rank",
        "LoRA adapters (peft)",
        "yes",
        "as the strategy it modifies, over the trainable (adapter) parameters (not run with peft in "
        "this repository's tests)",
        "",
    ),
}
assert set(STRATEGIES) <= set(COVERAGE), "every strategy plan may recommend needs a coverage row"


def coverage(strategies: list[str], flags: set[str]) -> list[Coverage]:
    """Rows for the strategies `plan` shows and the flags it uses or suggests (in that order)."""
    rows = [COVERAGE[s] for s in strategies if s in COVERAGE]
    rows += [COVERAGE[f] for f in ("--offload", "--checkpointing", "--lora-rank") if f in flags]
    return rows
