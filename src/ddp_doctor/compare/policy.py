"""A run's mixed-precision and sharding policy, as the values two runs are compared by (issue 25 d).

One string (or None: not recorded) per setting, read from the probe's config records
(docs/run-format.md): `dtypes` (probe/instruments/dtypes.py), `fsdp` (FSDP1 `MixedPrecision`,
FSDP2 `MixedPrecisionPolicy`, sharding strategy / `reshard_after_forward`), `ddp` (DDP's own
`mixed_precision`), `ddp_comm_hook` (a compression hook reduces in float16/bfloat16) and
`deepspeed` (ZeRO stage, fp16/bf16, `communication_data_type`).

| key | what |
|---|---|
| `sharding` | `replicated` (one process, or DDP), `FSDP1 <strategy>`, `FSDP2, reshard_after_forward=…`, `DeepSpeed ZeRO-<stage>` |
| `param_dtype` | the model's parameters as stored (elements per dtype when mixed) |
| `optimizer_dtype` | the tensors the optimizer steps (fp32 master copies of a DeepSpeed engine) |
| `grad_dtype` | their gradients at the first optimizer step (upcast or kept low) |
| `buffer_dtype` | the model's buffers as stored (FSDP1 `buffer_dtype` casts them) |
| `compute_dtype` | the dtype a wrapper casts parameters to for forward/backward (FSDP `param_dtype`, DDP mixed precision, DeepSpeed fp16/bf16); else the stored one |
| `reduce_dtype` | the dtype gradients are averaged across ranks in (FSDP `reduce_dtype`, else `param_dtype`; a DDP compression hook; DeepSpeed's communication dtype); one process: its gradients' dtype |
| `output_dtype` | FSDP2 `output_dtype` (`as computed` when unset) |
| `cast_forward_inputs` | FSDP1/FSDP2, when a `param_dtype` is set |

Autocast and the GradScaler are compared separately (the `precision` setting).
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.core.catalog import Text
from ddp_doctor.rundir.reader import RunData

POLICY_KEYS: tuple[str, ...] = (
    "sharding",
    "param_dtype",
    "optimizer_dtype",
    "grad_dtype",
    "buffer_dtype",
    "compute_dtype",
    "reduce_dtype",
    "output_dtype",
    "cast_forward_inputs",
)
LABELS: dict[str, Text] = {
    "sharding": Text("sharding", "分片方式"),
    "param_dtype": Text("parameters stored in", "参数的存储类型"),
    "optimizer_dtype": Text("optimizer steps tensors in", "优化器更新的张量类型"),
    "grad_dtype": Text("gradients at the step in", "优化步时梯度的类型"),
    "buffer_dtype": Text("buffers in", "缓冲区类型"),
    "compute_dtype": Text("parameters computed in", "参数的计算类型"),
    "reduce_dtype": Text("gradients averaged across ranks in", "跨 rank 平均梯度所用类型"),
    "output_dtype": Text("FSDP2 output_dtype", "FSDP2 output_dtype"),
    "cast_forward_inputs": Text("cast_forward_inputs", "cast_forward_inputs"),
}
STORED = ("param_dtype", "optimizer_dtype", "grad_dtype", "buffer_dtype")
MIXED_PRECISION = ("compute_dtype", "reduce_dtype", "output_dtype", "cast_forward_inputs")
REPLICATED = "replicated"


def dtype_mix(counts: Any) -> str | None:
    """`{"float32": 900, "bfloat16": 100}` → "float32 90% + bfloat16 10%"; one dtype → its name."""
    if not isinstance(counts, dict):
        return None
    valid = {
        str(k): int(v) for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0
    }
    if not valid:
        return None
    if len(valid) == 1:
        return next(iter(valid))
    total = sum(valid.values())
    ranked = sorted(valid.items(), key=lambda kv: (-kv[1], kv[0]))
    return " + ".join(f"{name} {n / total:.0%}" for name, n in ranked)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _flag(value: Any) -> str | None:
    return ("yes" if value else "no") if isinstance(value, bool) else None


def policy_of(run: RunData) -> dict[str, str | None]:
    """The values of :data:`POLICY_KEYS` for one run (None where the run did not record them)."""
    dtypes = run.config("dtypes") or {}
    out: dict[str, str | None] = dict.fromkeys(POLICY_KEYS)
    out["param_dtype"] = dtype_mix(dtypes.get("model_params"))
    out["optimizer_dtype"] = dtype_mix(dtypes.get("optimizer_params"))
    out["grad_dtype"] = dtype_mix(dtypes.get("grads"))
    out["buffer_dtype"] = dtype_mix(dtypes.get("buffers"))
    stored, grads = out["param_dtype"], out["grad_dtype"]
    fsdp, ds, ddp = run.config("fsdp"), run.config("deepspeed"), run.config("ddp")
    if ds is not None:
        stage = ds.get("zero_stage")
        out["sharding"] = f"DeepSpeed ZeRO-{stage}" if isinstance(stage, int) else "DeepSpeed"
        low = "float16" if ds.get("fp16") else "bfloat16" if ds.get("bf16") else None
        out["compute_dtype"] = low or stored
        out["reduce_dtype"] = _str(ds.get("communication_data_type")) or low or grads
    elif fsdp is not None and fsdp.get("version") == 1:
        out["sharding"] = f"FSDP1 {fsdp.get('sharding_strategy')}"
        param = _str(fsdp.get("param_dtype"))
        out["compute_dtype"] = param or stored
        out["reduce_dtype"] = _str(fsdp.get("reduce_dtype")) or param or grads
        out["cast_forward_inputs"] = _flag(fsdp.get("cast_forward_inputs")) if param else None
    elif fsdp is not None and fsdp.get("version") == 2:
        raf = fsdp.get("reshard_after_forward")
        out["sharding"] = "FSDP2" + (f", reshard_after_forward={raf}" if raf is not None else "")
        mp = _dict(fsdp.get("mp_policy"))
        param = _str(mp.get("param_dtype"))
        n_policies = fsdp.get("mp_policies")
        several = f" (root; {n_policies} policies)" if isinstance(n_policies, int) and n_policies > 1 else ""
        compute = param or stored
        out["compute_dtype"] = compute + several if compute is not None else None
        out["reduce_dtype"] = _str(mp.get("reduce_dtype")) or param or grads
        if mp:
            out["output_dtype"] = _str(mp.get("output_dtype")) or "as computed"
            out["cast_forward_inputs"] = _flag(mp.get("cast_forward_inputs")) if param else None
    elif ddp is not None or run.world_size == 1:
        out["sharding"] = REPLICATED
        mp = _dict(ddp.get("mixed_precision") if ddp is not None else None)
        out["compute_dtype"] = _str(mp.get("param_dtype")) or stored
        hook = run.config("ddp_comm_hook")
        hook_dtype = _str(hook.get("reduce_dtype")) if hook is not None else None
        if hook is not None and hook_dtype is None:
            hook_dtype = f"as comm hook {hook.get('hook')} reduces"
        out["reduce_dtype"] = hook_dtype or _str(mp.get("reduce_dtype")) or grads
    return out
