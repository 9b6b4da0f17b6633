"""DeepSpeed engines under `ddp-doctor run`, for real: DS_ACCELERATOR=cpu, gloo, 2 ranks, ZeRO
stages 0-3, fp32/bf16/fp16, accumulation 2 (tests/probe/scripts/deepspeed_train.py).

What the engine instrument records is checked against a direct computation (the step-0 global
gradient norm) and against what the engine itself does (skipped fp16 steps, its loss scale);
parameters are bit-identical with and without the probe; a loss left undivided under
accumulation and a static fp16 loss scale that overflows every step are confirmed, the clean
runs rule them out. The multi-node runner is run with a pdsh stand-in that gives each "node" a
fresh environment, as ssh would.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import teardown_race
import torch
import torch.nn.functional as F
from torch.utils.data import DistributedSampler

from ddp_doctor.analysis.context import build_context
from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.launch import deepspeed_env
from ddp_doctor.rundir.reader import read_run
from probe.helpers import (
    DDP_DOCTOR,
    RUN_TIMEOUT_S,
    SCRIPTS,
    base_env,
    close,
    kind,
    read_rank,
    run_plain,
    run_probe,
    torchrun,
)

pytest.importorskip("deepspeed")
sys.path.insert(0, str(SCRIPTS))
import toy_classifier as toy  # noqa: E402

pytestmark = pytest.mark.distributed
WORLD, GAS, STEPS = 2, 2, 12


def _env(**extra: str) -> dict[str, str]:
    return base_env(DS_ACCELERATOR="cpu", **extra)


def _script(stage: int | str, precision: str, *rest: str) -> list[str]:
    return torchrun("deepspeed_train.py", str(stage), precision, str(GAS), str(STEPS), *rest)


def _findings(out: Path) -> dict[str, object]:
    return {f.id: f for f in diagnose(out).findings}


def _step0_global_norm() -> float:
    """‖ḡ‖ of step 0 computed directly: each rank's first GAS micro-batches (as its
    DistributedSampler draws them), loss / GAS summed, averaged over ranks."""
    model = toy.make_model()
    dataset = toy.make_dataset(toy.BATCH * GAS * STEPS * WORLD)
    total = [torch.zeros_like(p) for p in model.parameters()]
    for rank in range(WORLD):
        indices = list(DistributedSampler(dataset, num_replicas=WORLD, rank=rank, shuffle=True, seed=0))
        model.zero_grad(set_to_none=True)
        for m in range(GAS):
            x, y = dataset[indices[m * toy.BATCH : (m + 1) * toy.BATCH]]
            (F.cross_entropy(model(x), y) / GAS).backward()
        for t, p in zip(total, model.parameters()):
            t += p.grad / WORLD
    return math.sqrt(sum(float(t.double().pow(2).sum()) for t in total))


def _load(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, weights_only=True)


def test_zero2_engine_steps_norms_and_bit_identical_parameters(tmp_path):
    out = tmp_path / "run"
    run_probe(out, _script(2, "fp32", "none", str(tmp_path / "probed.pt")), env=_env())
    run_plain(_script(2, "fp32", "none", str(tmp_path / "plain.pt")), env=_env())
    probed, plain = _load(tmp_path / "probed.pt"), _load(tmp_path / "plain.pt")
    assert probed.keys() == plain.keys() and all(torch.equal(probed[k], plain[k]) for k in probed)

    for rank in range(WORLD):
        records = read_rank(out, rank)
        assert not kind(records, "probe_error")
        assert not kind(
            records, "config", "compile"
        )  # DeepSpeed's own torch.compile'd helpers are not the model
        (cfg,) = kind(records, "config", "deepspeed")
        assert (cfg["zero_stage"], cfg["gradient_accumulation_steps"], cfg["dp_world_size"]) == (
            2,
            GAS,
            WORLD,
        )
        assert cfg["optimizer"] == "DeepSpeedZeroOptimizer" and cfg["basic_optimizer"] == "SGD"
        assert cfg["communication_data_type"] == "float32"  # the dtype ZeRO reduces in (issue 25 d)
        steps = kind(records, "step")
        assert [s["step"] for s in steps] == list(range(STEPS))
        for s in steps:
            assert s["micro_steps"] == GAS and not s["skipped"] and s["lr"] == [toy.LR]
            # the root the engine back-propagates: loss / GAS (engine.backward divides it)
            assert all(close(root, fn["value"] / GAS) for root, fn in zip(s["losses"], s["loss_fn"]))
            assert all(n >= 1 for n in s["sync"])  # ZeRO-2 reduces every micro-step
            (clip,) = s["clip"]
            assert clip["max_norm"] == 1.0 and clip["total_norm"] == s["grad_norm"]
        assert close(steps[0]["grad_norm"], _step0_global_norm(), rel=1e-5)

    ctx = build_context(read_run(out))
    assert ctx.grad_norm_source == "DeepSpeed engine global gradient norm"
    found = _findings(out)
    assert found["accum-loss-unscaled"].status == "ruled-out"
    assert found["ddp-bypassed"].status == "ruled-out"
    assert found["accum-no-sync-missing"].status == "ruled-out"
    assert found["accum-no-sync-missing"].evidence["zero_stage"] == 2
    assert found["fp16-overflow"].status == "ruled-out"
    assert found["replica-divergence"].status == "ruled-out"
    for fid in ("update-ratio-high", "unused-parameters"):  # switched off: ZeRO owns those tensors
        assert found[fid].status == "not-measured" and "ZeRO stage 2" in found[fid].summary


def test_loss_not_divided_under_accumulation_is_confirmed(tmp_path):
    out = tmp_path / "run"
    run_probe(out, _script(2, "fp32", "undivided"), env=_env())
    steps = kind(read_rank(out, 0), "step")
    assert all(close(root, fn["value"]) for s in steps for root, fn in zip(s["losses"], s["loss_fn"]))
    finding = _findings(out)["accum-loss-unscaled"]
    assert finding.status == "confirmed", finding.summary


def test_multinode_runner_reaches_the_ranks_through_its_env_file(tmp_path):
    """`ddp-doctor run -- deepspeed --hostfile H ...`: DeepSpeed's pdsh runner starts one launcher
    per host with only the variables it exports; the env file carries DDP_DOCTOR_* there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pdsh = bin_dir / "pdsh"
    pdsh.write_text(f'#!/bin/sh\nexec {sys.executable} {SCRIPTS / "fake_pdsh.py"} "$@"\n')
    pdsh.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    (work / "hostfile").write_text("localhost slots=1\n127.0.0.1 slots=1\n")
    (work / ".deepspeed_env").write_text("MY_SETTING=kept\n")  # the user's own file: read, not replaced
    from ddp_doctor.trainer.launch import free_port

    command = [
        sys.executable,
        "-m",
        "deepspeed.launcher.runner",
        "--hostfile",
        "hostfile",
        "--no_ssh_check",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        "--no_local_rank",
        str(SCRIPTS / "deepspeed_train.py"),
        "1",
        "fp32",
        str(GAS),
        "3",
    ]
    out = tmp_path / "run"
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [*DDP_DOCTOR, "run", "--out", str(out), "--", *command],
        cwd=work,  # the runner reads ./.deepspeed_env and ./hostfile from here
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 0 or teardown_race.tolerated(proc, out, "deepspeed runner"), proc.stderr[-4000:]
    lines = (out / "launcher" / deepspeed_env.FILE_NAME).read_text().splitlines()
    assert lines[0] == "MY_SETTING=kept" and f"DDP_DOCTOR_RUN_DIR={out.resolve()}" in lines
    headers = [read_rank(out, rank)[0] for rank in range(WORLD)]
    assert [(h["rank"], h["world_size"], h["node"], h["local_world_size"]) for h in headers] == [
        (0, 2, "node-0", 1),
        (1, 2, "node-1", 1),
    ]
    assert all(len(kind(read_rank(out, rank), "step")) == 3 for rank in range(WORLD))


def test_user_env_file_lines_are_read_as_deepspeeds_runner_reads_them(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / ".deepspeed_env").write_text("A=1\nnot a variable\n")
    (cwd / ".deepspeed_env").write_text("B=x=y\n")
    assert deepspeed_env.user_lines({}, cwd) == ["A=1", "B=x=y"]  # home first, then cwd
    (cwd / "custom_env").write_text("C=3\n")
    assert deepspeed_env.user_lines({"DS_ENV_FILE": "custom_env"}, cwd) == ["C=3"]
    path = deepspeed_env.write_env_file(
        tmp_path / "launcher", {"DDP_DOCTOR_RUN_DIR": "/r", "DDP_DOCTOR_SET": '{"a": "b"}'}, {}
    )
    monkeypatch.chdir(cwd)
    assert path.read_text().splitlines() == ["A=1", "DDP_DOCTOR_RUN_DIR=/r"]  # a quoted value cannot pass
    assert deepspeed_env.is_deepspeed_runner(["deepspeed", "--num_gpus", "2", "train.py"])
    assert deepspeed_env.is_deepspeed_runner([sys.executable, "-m", "deepspeed.launcher.runner", "t.py"])
    assert not deepspeed_env.is_deepspeed_runner(["torchrun", "train.py"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stage", "precision", "style"),
    [
        (0, "fp32", "none"),
        (1, "fp32", "none"),
        (3, "fp32", "none"),
        (0, "bf16", "none"),
        (2, "bf16", "none"),
        (1, "fp16", "none"),
        (1, "fp32", "torch-style"),  # loss.backward() on the engine's output
        (2, "fp16", "torch-style"),  # engine.scale(loss).backward()
        ("2+offload", "fp32", "none"),  # ZeRO-Offload (optimizer on the CPU)
    ],
)
def test_stages_and_precisions_record_steps_and_keep_parameters(tmp_path, stage, precision, style):
    out = tmp_path / "run"
    run_probe(out, _script(stage, precision, style, str(tmp_path / "probed.pt")), env=_env())
    run_plain(_script(stage, precision, style, str(tmp_path / "plain.pt")), env=_env())
    probed, plain = _load(tmp_path / "probed.pt"), _load(tmp_path / "plain.pt")
    assert probed.keys() == plain.keys() and all(torch.equal(probed[k], plain[k]) for k in probed)
    records = read_rank(out, 0)
    assert not kind(records, "probe_error")
    (cfg,) = kind(records, "config", "deepspeed")
    assert cfg["offload_optimizer"] == ("cpu" if "offload" in str(stage) else None)
    stage = int(str(stage).split("+")[0])
    steps = kind(records, "step")
    assert [s["step"] for s in steps] == list(range(STEPS))  # no extra step from the engine's init
    assert all(s["micro_steps"] == GAS and s["grad_norm"] is not None for s in steps)
    # the root the gradients come from: loss / GAS, without the fp16 loss scale, either way
    assert all(
        close(r, fn["value"] / GAS, rel=1e-3) for s in steps for r, fn in zip(s["losses"], s["loss_fn"])
    )
    synced = [s["sync"] for s in steps]
    assert all(n[-1] >= 1 for n in synced) and all((n[0] >= 1) == (stage >= 2) for n in synced)
    if precision == "fp32":
        assert close(steps[0]["grad_norm"], _step0_global_norm(), rel=1e-5)
    if precision == "fp16":
        assert all(isinstance(s["scale"], float) for s in steps)
    found = _findings(out)
    assert found["ddp-bypassed"].status == "ruled-out"
    assert found["accum-loss-unscaled"].status == "ruled-out"
    assert found["replica-divergence"].status == ("not-measured" if stage == 3 else "ruled-out")


@pytest.mark.slow
def test_static_fp16_loss_scale_that_overflows_every_step_is_confirmed(tmp_path):
    out = tmp_path / "run"
    run_probe(out, _script(2, "fp16-static"), env=_env())
    steps = kind(read_rank(out, 0), "step")
    assert all(s["skipped"] and s["found_inf"] and s["scale"] == 2.0**24 for s in steps)
    finding = _findings(out)["fp16-overflow"]
    assert finding.status == "confirmed" and "DeepSpeed" in finding.summary


@pytest.mark.slow
def test_a_failing_engine_instrument_is_disabled_and_changes_nothing(tmp_path):
    out = tmp_path / "run"
    run_probe(
        out,
        _script(2, "fp32", "none", str(tmp_path / "probed.pt")),
        env=_env(DDP_DOCTOR_PROBE_FAULT="deepspeed"),
    )
    run_plain(_script(2, "fp32", "none", str(tmp_path / "plain.pt")), env=_env())
    probed, plain = _load(tmp_path / "probed.pt"), _load(tmp_path / "plain.pt")
    assert all(torch.equal(probed[k], plain[k]) for k in plain)
    records = read_rank(out, 0)
    assert [e["instrument"] for e in kind(records, "probe_error")] == ["deepspeed"]
    # the torch-level instruments still record every optimizer step
    assert len(kind(records, "step")) == STEPS
