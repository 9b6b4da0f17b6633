"""In-process checks of the probe's pure pieces (no process group)."""

from __future__ import annotations

import json

import torch

from ddp_doctor.launch.launcher import INJECT_DIR, allowed_env, child_env
from ddp_doctor.probe.instruments.data import input_hash
from ddp_doctor.probe.instruments.full import layer_group
from ddp_doctor.probe.instruments.replicas import _bits_sum, _wrap32
from ddp_doctor.probe.options import ProbeOptions
from ddp_doctor.probe.recorder import RankRecorder, encode


def test_env_allow_list_keeps_launcher_settings_and_drops_credentials():
    env = {
        "WORLD_SIZE": "4",
        "NCCL_DEBUG": "INFO",
        "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "HOME": "/root",
        "NCCL_IB_AUTH_KEY": "x",
        "TORCH_HUB_TOKEN": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "PATH": "/bin",
        "ACCELERATE_MIXED_PRECISION": "bf16",
        "WANDB_API_KEY": "x",
    }
    assert allowed_env(env) == {
        "ACCELERATE_MIXED_PRECISION": "bf16",
        "NCCL_DEBUG": "INFO",
        "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "WORLD_SIZE": "4",
    }


def test_child_env_puts_the_shim_first_and_keeps_the_users_pythonpath(tmp_path):
    env = child_env(ProbeOptions(run_dir=tmp_path, level="full", every=7), {"PYTHONPATH": "/mine"})
    assert env["PYTHONPATH"].split(":") == [str(INJECT_DIR), "/mine"]
    assert ProbeOptions.from_env(env) == ProbeOptions(run_dir=tmp_path, level="full", every=7)
    assert (INJECT_DIR / "sitecustomize.py").is_file()


def test_non_finite_numbers_are_written_as_strings():
    line = encode({"kind": "step", "losses": [1.5, float("nan"), float("inf"), -float("inf")]})
    assert json.loads(line)["losses"] == [1.5, "nan", "inf", "-inf"]
    assert line.endswith(b"\n") and line.count(b"\n") == 1


def test_recorder_writes_header_then_records_seen_before_the_file_existed(tmp_path):
    recorder = RankRecorder(tmp_path)
    recorder.write({"kind": "config", "what": "scaler"})
    assert not (tmp_path / "ranks").exists()
    recorder.open(3, {"kind": "header", "rank": 3})
    recorder.write({"kind": "step", "step": 0})
    recorder.close()
    lines = (tmp_path / "ranks" / "rank-00003.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["header", "config", "step"]


def test_replica_checksum_changes_with_a_single_bit_where_float_sums_do_not():
    p = torch.randn(100_000, generator=torch.Generator().manual_seed(0))
    q = p.clone()
    q[12345] = torch.nextafter(q[12345], torch.tensor(float("inf")))  # one ulp
    assert _wrap32(int(_bits_sum(p))) != _wrap32(int(_bits_sum(q)))
    assert -(2**31) <= _wrap32(int(_bits_sum(p))) < 2**31


def test_input_hash_sees_one_changed_token_and_is_deterministic():
    ids = torch.randint(0, 256, (2, 64), generator=torch.Generator().manual_seed(0))
    other = ids.clone()
    other[1, 7] += 1
    assert int(input_hash(ids)) == int(input_hash(ids.clone()))
    assert int(input_hash(ids)) != int(input_hash(other))


def test_layer_groups_follow_parameter_names():
    assert layer_group("model.embed_tokens.weight") == "embedding"
    assert layer_group("model.layers.0.self_attn.q_proj.weight") == "attention"
    assert layer_group("model.layers.0.mlp.up_proj.weight") == "mlp"
    assert layer_group("model.layers.0.input_layernorm.weight") == "norm"
    assert layer_group("lm_head.weight") == "head"
    assert layer_group("0.weight") == "other"
