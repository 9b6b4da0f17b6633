"""What one accelerator offers: memory, bf16 support, peak FLOPs and link bandwidth.

The table lives in one data file, ``gpus.json`` beside this module (JSON rather than TOML so that
Python 3.10, which lacks tomllib, reads it too). Each row names its datasheet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

GIB = 2**30
# Accepted `--gpu-mem` range in GiB: above the largest accelerator memory by orders of magnitude,
# finite so that byte counts stay integers.
MAX_GPU_MEMORY_GIB = 1e6

# Used for `--gpu-mem` when the GPU is not in the table: unknown FLOPs and links, so the plan
# assumes an A100-class part for time estimates and says so.
CUSTOM_GPU_TEMPLATE = "a100-80gb"


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_gib: float
    bf16: bool
    peak_tflops: dict[str, float]
    link_gbps: float  # unidirectional GB/s to a peer GPU in the same node
    source: str

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GIB)

    def peak_flops(self, precision: str) -> float:
        """Dense peak FLOP/s in this precision; bf16 on a part without it falls back to fp32 peak."""
        tflops = self.peak_tflops.get(precision, self.peak_tflops["fp32"])
        return tflops * 1e12


@cache
def gpu_table() -> dict[str, GpuSpec]:
    raw = json.loads(resources.files("ddp_doctor.plan").joinpath("gpus.json").read_text("utf-8"))
    return {name: GpuSpec(name=name, **row) for name, row in raw["gpus"].items()}


def get_gpu(name: str | None, memory_gib: float | None = None) -> GpuSpec:
    """A GPU from the table, or a custom one of `memory_gib` (other figures from the template)."""
    table = gpu_table()
    if name is None and memory_gib is None:
        raise ValueError("give --gpu NAME or --gpu-mem GB")
    if name is not None and name not in table:
        raise ValueError(f"unknown --gpu {name!r}; known: {', '.join(table)} (or use --gpu-mem GB)")
    base = table[name or CUSTOM_GPU_TEMPLATE]
    if memory_gib is not None and not 0 < memory_gib <= MAX_GPU_MEMORY_GIB:  # also rejects nan/inf
        raise ValueError(
            f"--gpu-mem must be a finite number of GiB up to {MAX_GPU_MEMORY_GIB:g}, got {memory_gib:g}"
        )
    if memory_gib is None:
        return base
    label = name or f"custom-{memory_gib:g}gb"
    source = base.source if name else f"--gpu-mem {memory_gib:g}; FLOPs and links assumed as {base.name}"
    return GpuSpec(
        name=label,
        memory_gib=memory_gib,
        bf16=base.bf16,
        peak_tflops=base.peak_tflops,
        link_gbps=base.link_gbps,
        source=source,
    )
