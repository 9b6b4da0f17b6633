"""What one run of the reference trainer is: `TrainConfig`, and its command-line form.

Every field is a `--flag` of `python -m ddp_doctor.trainer` (underscores become dashes,
booleans are `--flag/--no-flag`, `--fault` is repeatable). `config_from_argv` and `config_to_argv`
are inverse, so a launcher can rebuild the exact command line of a config. Plain data: no torch.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args, get_type_hints

from ddp_doctor.presets import PRESETS
from ddp_doctor.trainer.faults import DDP_ONLY_FAULTS, FAULTS, FP16_FAULTS, check_faults

Precision = Literal["fp32", "bf16", "fp16"]
CompileMode = Literal["off", "before_ddp", "after_ddp"]
Strategy = Literal["ddp", "zero1", "fsdp"]
AttnImplementation = Literal["sdpa", "eager"]

# Files a run writes into `out_dir` (rank 0 only).
METRICS_FILE = "metrics.jsonl"  # one JSON line per logged optimizer step
SUMMARY_FILE = "summary.txt"  # the end-of-run summary table, as printed


@dataclass
class TrainConfig:
    """One training run. Defaults: the forum setup (micro-batch 2, accumulation 8) on `tiny`."""

    # model and schedule
    preset: str = "tiny"
    steps: int = 20  # optimizer steps
    micro_batch: int = 2  # samples per rank per micro-step
    accum: int = 8  # micro-steps per optimizer step
    seq_len: int = 128
    lr: float = 3e-4
    warmup_steps: int = 5  # optimizer steps of linear warmup
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio at `steps`
    weight_decay: float = 0.1
    adam_eps: float = 1e-8
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    clip: float | None = 1.0  # max global gradient norm; None = no clipping
    # numerics and memory
    precision: Precision = "fp32"
    compile: CompileMode = "off"
    checkpointing: bool = False  # activation checkpointing of every decoder layer
    freeze_layers: int = 0  # freeze the first N decoder layers
    attn_implementation: AttnImplementation = "sdpa"
    # distribution
    strategy: Strategy = "ddp"
    find_unused_parameters: bool = False
    bucket_cap_mb: float = 25.0  # DDP's default
    gradient_as_bucket_view: bool = False
    static_graph: bool = False
    # pitfalls to reproduce (see faults.py)
    faults: tuple[str, ...] = ()
    fault_step: int = 3  # optimizer step at which nan-at-step / replica-desync fire
    # data (see data.py)
    seed: int = 0
    dataset_docs: int = 512  # documents per epoch; epochs = steps * global batch / dataset_docs
    doc_min_len: int = 16  # documents are uniform in [doc_min_len, seq_len + 1] tokens
    # output
    out_dir: str | None = None  # where rank 0 writes metrics.jsonl; None = no file
    log_every: int = 1  # optimizer steps between metric lines
    progress: bool = True  # rich progress bar on rank 0 when stdout is a TTY

    def __post_init__(self) -> None:
        self.faults = tuple(self.faults)
        check_faults(self.faults)
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}")
        for name in ("steps", "micro_batch", "accum", "seq_len", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 2 <= self.doc_min_len <= self.seq_len + 1:
            raise ValueError("doc_min_len must be in [2, seq_len + 1] (a document needs one target)")
        if self.static_graph and self.accum > 1 and not self.has("sync-every-micro"):
            # Measured on torch 2.13 (gloo): DDP(static_graph=True) + no_sync fails on the first
            # backward with "expect_autograd_hooks_ INTERNAL ASSERT FAILED" (reducer.cpp).
            raise ValueError(
                "static_graph with gradient accumulation (no_sync) fails inside "
                "PyTorch's DDP; use --accum 1 or --no-static-graph"
            )
        if self.strategy == "fsdp" and DDP_ONLY_FAULTS.intersection(self.faults):
            raise ValueError(
                f"faults {', '.join(sorted(DDP_ONLY_FAULTS.intersection(self.faults)))} "
                "need --strategy ddp or zero1 (they act on DDP's replicas)"
            )
        if FP16_FAULTS.intersection(self.faults):
            # These pitfalls only exist under float16 mixed precision.
            self.precision = "fp16"
            if "clip-before-unscale" in self.faults and self.clip is None:
                self.clip = 1.0

    def has(self, fault: str) -> bool:
        """Is this fault switched on? (Guards against typos in the loop: the name must exist.)"""
        assert fault in FAULTS, fault
        return fault in self.faults


def _choices(tp: object) -> tuple[str, ...] | None:
    args = get_args(tp)
    return args if args and all(isinstance(a, str) for a in args) else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ddp_doctor.trainer",
        description="Reference LLaMA trainer (DDP under torchrun, single process otherwise).",
    )
    hints = get_type_hints(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        tp = hints[f.name]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[operator]
        if f.name == "faults":
            parser.add_argument(
                "--fault",
                dest="faults",
                action="append",
                default=[],
                choices=tuple(FAULTS),
                help="reproduce this pitfall (repeatable)",
            )
        elif tp is bool:
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=default)
        elif _choices(tp):
            parser.add_argument(flag, dest=f.name, choices=_choices(tp), default=default)
        elif f.name == "clip":
            parser.add_argument(
                flag, dest=f.name, type=_optional_float, default=default, help="max gradient norm, or 'none'"
            )
        elif f.name == "out_dir":
            parser.add_argument(flag, dest=f.name, default=default)
        else:
            parser.add_argument(flag, dest=f.name, type=type(default), default=default)
    return parser


def _optional_float(text: str) -> float | None:
    return None if text.lower() in ("none", "off", "") else float(text)


def config_from_argv(argv: list[str] | None = None) -> TrainConfig:
    """Parse the trainer's command line (None = sys.argv[1:]) into a TrainConfig."""
    ns = _parser().parse_args(argv)
    values = vars(ns)
    values["faults"] = tuple(values["faults"])
    return TrainConfig(**values)


def config_to_argv(cfg: TrainConfig) -> list[str]:
    """The flags that reproduce `cfg` with `config_from_argv` (only fields that differ from defaults)."""
    default = TrainConfig()
    argv: list[str] = []
    for f in dataclasses.fields(TrainConfig):
        value = getattr(cfg, f.name)
        if value == getattr(default, f.name):
            continue
        flag = "--" + f.name.replace("_", "-")
        if f.name == "faults":
            for name in value:
                argv += ["--fault", name]
        elif isinstance(value, bool):
            argv.append(flag if value else "--no-" + flag[2:])
        elif value is None:
            argv += [flag, "none"] if f.name == "clip" else []
        else:
            argv += [flag, str(value)]
    return argv
