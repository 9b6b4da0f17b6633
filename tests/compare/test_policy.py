"""compare names mixed-precision and sharding policy differences (issue 25 d; compare/policy.py).

Units: the policy values each wrapper's config records give (FSDP1 MixedPrecision, FSDP2
MixedPrecisionPolicy, DDP mixed precision and compression hooks, DeepSpeed ZeRO/fp16/bf16), and the
cause specs over them (a setting a run did not record is never compared). Real gloo runs of one
script (tests/compare/scripts/policy_mlp.py) that differ only in the policy: FSDP2 without vs with
MixedPrecisionPolicy(param_dtype=bfloat16), DDP without vs with the fp16_compress_hook, and one
process vs DDP (nothing to name).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import teardown_race

from ddp_doctor.compare.analysis import RunSummary
from ddp_doctor.compare.causes import CAUSES, Pair
from ddp_doctor.compare.policy import POLICY_KEYS, dtype_mix, policy_of

SCRIPT = Path(__file__).parent / "scripts" / "policy_mlp.py"
DDP_DOCTOR = [sys.executable, "-m", "ddp_doctor.cli"]
TIMEOUT_S = 300
F32 = {"float32": 100}


def _run_data(world: int = 2, **configs: dict[str, Any]) -> Any:
    """A stand-in RunData: the config records policy_of reads, by `what`."""
    return SimpleNamespace(world_size=world, config=lambda what: configs.get(what))


def test_dtype_mix_names_one_dtype_or_the_shares():
    assert dtype_mix({"float32": 10}) == "float32"
    assert dtype_mix({"float32": 25, "bfloat16": 75}) == "bfloat16 75% + float32 25%"
    assert dtype_mix({}) is None and dtype_mix(None) is None and dtype_mix({"x": "nan"}) is None


def test_one_process_and_ddp_are_both_replicated_and_reduce_in_their_gradient_dtype():
    dtypes = {"model_params": F32, "optimizer_params": F32, "grads": F32, "buffers": {}}
    one = policy_of(_run_data(1, dtypes=dtypes))
    ddp = policy_of(_run_data(2, dtypes=dtypes, ddp={"mixed_precision": None}))
    assert one == ddp
    assert (
        one["sharding"] == "replicated" and one["reduce_dtype"] == "float32" and one["buffer_dtype"] is None
    )
    # a world > 1 run with no wrapper seen: the sharding is not known, not assumed
    assert policy_of(_run_data(2, dtypes=dtypes))["sharding"] is None


def test_each_wrapper_gives_its_compute_and_reduce_dtype():
    dtypes = {"model_params": F32, "grads": F32}
    fsdp1 = policy_of(
        _run_data(fsdp={"version": 1, "sharding_strategy": "FULL_SHARD", "param_dtype": "bfloat16",
                        "reduce_dtype": None, "cast_forward_inputs": False}, dtypes=dtypes)
    )  # fmt: skip
    assert (fsdp1["sharding"], fsdp1["compute_dtype"], fsdp1["reduce_dtype"]) == (
        "FSDP1 FULL_SHARD", "bfloat16", "bfloat16",  # FSDP1: reduce_dtype None reduces in param_dtype
    )  # fmt: skip
    fsdp2 = policy_of(
        _run_data(fsdp={"version": 2, "reshard_after_forward": False, "mp_policies": 2,
                        "mp_policy": {"param_dtype": "bfloat16", "reduce_dtype": "float32",
                                      "output_dtype": "float32", "cast_forward_inputs": True}}, dtypes=dtypes)
    )  # fmt: skip
    assert fsdp2["sharding"] == "FSDP2, reshard_after_forward=False"
    assert fsdp2["compute_dtype"] == "bfloat16 (root; 2 policies)" and fsdp2["reduce_dtype"] == "float32"
    assert (fsdp2["output_dtype"], fsdp2["cast_forward_inputs"]) == ("float32", "yes")
    ddp_mp = policy_of(
        _run_data(
            ddp={"mixed_precision": {"param_dtype": "float16", "reduce_dtype": "float32"}}, dtypes=dtypes
        )
    )
    assert (ddp_mp["compute_dtype"], ddp_mp["reduce_dtype"]) == ("float16", "float32")
    hook = policy_of(
        _run_data(ddp={}, ddp_comm_hook={"hook": "my.powersgd", "reduce_dtype": None}, dtypes=dtypes)
    )
    assert hook["reduce_dtype"] == "as comm hook my.powersgd reduces"
    zero = policy_of(_run_data(deepspeed={"zero_stage": 2, "bf16": True, "communication_data_type": None}))
    assert (zero["sharding"], zero["compute_dtype"], zero["reduce_dtype"]) == (
        "DeepSpeed ZeRO-2", "bfloat16", "bfloat16",
    )  # fmt: skip
    fp32_comm = policy_of(
        _run_data(deepspeed={"zero_stage": 3, "fp16": True, "communication_data_type": "float32"})
    )
    assert fp32_comm["reduce_dtype"] == "float32"


def _pair(a: dict[str, str | None], b: dict[str, str | None]) -> Pair:
    summary = cast("Callable[..., RunSummary]", SimpleNamespace)
    return Pair(summary(policy=a), summary(policy=b), "samples", None, {}, None, 0)


def _policy_causes(pair: Pair) -> dict[str, Any]:
    out = {}
    for spec in CAUSES:
        if spec.key in ("mixed-precision", "dtypes", "sharding"):
            for cause in spec.find(pair, spec):
                out[cause.key] = cause
    return out


def test_policy_causes_name_what_differs_and_skip_what_a_run_did_not_record():
    base = dict.fromkeys(POLICY_KEYS, "float32") | {"sharding": "replicated"}
    assert _policy_causes(_pair(base, dict(base))) == {}
    unknown = dict.fromkeys(POLICY_KEYS)  # an older run: nothing recorded, nothing claimed
    assert _policy_causes(_pair(base, unknown)) == {}
    b = base | {
        "param_dtype": "bfloat16",
        "grad_dtype": "bfloat16",
        "reduce_dtype": "bfloat16",
        "sharding": "FSDP2",
    }
    causes = _policy_causes(_pair(base, b))
    assert set(causes) == {"mixed-precision", "dtypes", "sharding"}
    assert causes["dtypes"].evidence == {
        "param_dtype": {"a": "float32", "b": "bfloat16"}, "grad_dtype": {"a": "float32", "b": "bfloat16"},
    }  # fmt: skip
    assert "gradients averaged across ranks in A float32, B bfloat16" in causes["mixed-precision"].summary.en
    assert "跨 rank 平均梯度所用类型：A float32，B bfloat16" in causes["mixed-precision"].summary.zh
    assert causes["sharding"].score < causes["dtypes"].score  # the same arithmetic: named, ranked low


# --- real runs -------------------------------------------------------------------------------


def _record(out: Path, policy: str, world: int) -> Path:
    launch = (
        [sys.executable, str(SCRIPT), policy]
        if world == 1
        else [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
              str(SCRIPT), policy]
    )  # fmt: skip
    env = {**__import__("os").environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([*DDP_DOCTOR, "run", "--out", str(out), "--", *launch],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=env)  # fmt: skip
    assert proc.returncode == 0 or teardown_race.tolerated(proc, out, f"policy {policy}"), proc.stderr[-3000:]
    return out


def _compare(a: Path, b: Path) -> dict[str, Any]:
    proc = subprocess.run([*DDP_DOCTOR, "compare", str(a), str(b), "--format", "json"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _causes(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["key"]: c for c in result["causes"]}


@pytest.mark.distributed
def test_fsdp2_with_and_without_a_bf16_mixed_precision_policy(tmp_path):
    a = _record(tmp_path / "fsdp2", "fsdp2", 2)
    b = _record(tmp_path / "fsdp2-bf16", "fsdp2-bf16", 2)
    result = _compare(a, b)
    causes = _causes(result)
    assert causes["mixed-precision"]["evidence"] == {"compute_dtype": {"a": "float32", "b": "bfloat16"}}
    assert "sharding" not in causes and "dtypes" not in causes  # sharded alike, stored in float32 alike
    settings = {row["setting"]: row for row in result["settings_diff"]}
    assert settings["reduce_dtype"]["same"] and settings["reduce_dtype"]["b"] == "float32"
    assert settings["cast_forward_inputs"]["b"] == "yes" and settings["sharding"]["b"] == "FSDP2"


@pytest.mark.distributed
def test_ddp_with_and_without_the_fp16_compression_hook(tmp_path):
    a = _record(tmp_path / "plain", "plain", 2)
    b = _record(tmp_path / "hook", "ddp-fp16-hook", 2)
    causes = _causes(_compare(a, b))
    assert causes["mixed-precision"]["evidence"] == {"reduce_dtype": {"a": "float32", "b": "float16"}}
    assert set(causes) & {"dtypes", "sharding", "precision"} == set()


@pytest.mark.slow
@pytest.mark.distributed
def test_one_process_vs_ddp_names_no_policy_difference(tmp_path):
    one = _record(tmp_path / "one", "plain", 1)
    two = _record(tmp_path / "two", "plain", 2)
    result = _compare(one, two)
    assert set(_causes(result)) & {"mixed-precision", "dtypes", "sharding"} == set()
    settings = {row["setting"]: row for row in result["settings_diff"]}
    assert all(
        settings[k]["same"]
        for k in ("sharding", "param_dtype", "grad_dtype", "compute_dtype", "reduce_dtype")
    )
