"""FSDP2 / DTensor: every instrument records correct values without issuing a collective.

The e2e runs compare what the probe recorded (and what the analysis combined across ranks) with
norms the training script computed directly with `full_tensor()` (tests/probe/scripts/fsdp2_clip.py).
The unit tests build DTensors on a one-rank gloo mesh to reach the partial-placement paths.
"""

from __future__ import annotations

import json
import math
import subprocess

import pytest
import torch

from ddp_doctor.analysis.quantities.shards import combine_clip, combine_full
from ddp_doctor.rundir.reader import CLIP_COLUMNS, read_run
from probe.helpers import DDP_DOCTOR, base_env, kind, read_rank, run_plain, run_probe, torchrun

WORLD = 2
MAX_NORM = 0.5  # = fsdp2_clip.MAX_NORM


def close(a: float, b: float, rel: float = 1e-5) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def _check_basic(out, direct) -> None:
    per_rank = [kind(read_rank(out, r), "step") for r in range(WORLD)]
    for r in range(WORLD):
        assert kind(read_rank(out, r), "probe_error") == []
        assert len(per_rank[r]) == len(direct)
        for step in per_rank[r]:
            assert step["sync"] == [0, 2]  # accumulation: reduce-scatter (two groups) on the last micro only
    for i, want in enumerate(direct):
        # each rank holds one shard of the averaged gradient: the shards' squares add up to ‖g‖²
        assert close(sum(steps[i]["grad_sq_global"][-1] for steps in per_rank), sum(want["grad_sq"]))
    _, clip = combine_clip(read_run(out))
    totals = clip[:, CLIP_COLUMNS.index("total_norm")]
    assert len(totals) == len(direct)
    assert all(close(got, want["clip_total"]) for got, want in zip(totals, direct))


def _direct(path) -> list[dict]:
    return json.loads(path.read_text())


def test_fsdp2_full_level_records_norms_equal_to_a_direct_computation(tmp_path):
    out, direct_file = tmp_path / "run", tmp_path / "direct.json"
    run_probe(out, torchrun("fsdp2_clip.py", str(direct_file)), "--level", "full", "--every", "1")
    direct = _direct(direct_file)
    _check_basic(out, direct)
    full = combine_full(read_run(out))
    assert [f["step"] for f in full] == list(range(len(direct)))
    for i, (rec, want) in enumerate(zip(full, direct)):
        assert kind(read_rank(out, 0), "full")[i]["sharded"] is True
        (group,) = rec["groups"].values()  # toy parameter names ("0.weight") are all "other"
        scale = min(1.0, MAX_NORM / (want["clip_total"] + 1e-6))  # `full` sees the clipped gradient
        assert close(group["grad_norm"] ** 2, sum(want["grad_sq"]) * scale**2, rel=1e-4)
        assert close(group["update_norm"] ** 2, sum(want["update_sq"]), rel=1e-4)
        assert close(group["param_norm"] ** 2, sum(want["param_sq_after"]), rel=1e-4)
        assert group["numel"] == want["numel"]
        (adam,) = rec["adam"]
        assert adam["below"] == want["below"] and adam["numel"] == want["numel"]
    rep = subprocess.run(
        [*DDP_DOCTOR, "report", str(out), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=base_env(),
    )
    assert rep.returncode == 0, rep.stderr[-3000:]
    report = json.loads(rep.stdout)
    assert report["run"]["optimizer_steps"] == len(direct)
    # clip_grad_norm_ on the DTensors: one coefficient on every rank, the full gradient's norm
    (clip,) = [f for f in report["findings"] if f["id"] == "fsdp-clip-wrong"]
    assert clip["status"] == "ruled-out", clip["summary"]
    ev = clip["evidence"]
    assert ev["coefficient_spread"] < 1e-5 and close(ev["clip_total_norm"], direct[ev["step"]]["clip_total"])
    assert close(ev["full_grad_norm"] ** 2, sum(direct[ev["step"]]["grad_sq"]), rel=1e-4)
    assert close(ev["rank_coefficients"]["0"], min(1.0, MAX_NORM / (direct[ev["step"]]["clip_total"] + 1e-6)))


@pytest.mark.slow
def test_fsdp2_basic_level_norms_and_bit_identical_parameters(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("fsdp2_clip.py", str(tmp_path / "d.json"), str(tmp_path / "probed.pt")))
    _check_basic(out, _direct(tmp_path / "d.json"))
    run_plain(torchrun("fsdp2_clip.py", str(tmp_path / "d0.json"), str(tmp_path / "bare.pt")))
    probed, bare = torch.load(tmp_path / "probed.pt"), torch.load(tmp_path / "bare.pt")
    assert probed.keys() == bare.keys() and all(torch.equal(probed[k], bare[k]) for k in bare)


# --- units: DTensor placements on a one-rank mesh --------------------------------------------------


@pytest.fixture(scope="module")
def mesh():
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_port()}", rank=0, world_size=1)
    yield init_device_mesh("cpu", (1,))
    dist.destroy_process_group()


def _port() -> int:
    from ddp_doctor.trainer.launch import free_port

    return free_port()


def test_local_and_partial_helpers(mesh):
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    from ddp_doctor.probe.steps import _fetch, is_partial, local

    t = torch.tensor([3.0, 4.0])
    shard = DTensor.from_local(t, mesh, [Shard(0)])
    assert local(shard) is not shard and torch.equal(local(shard), t) and is_partial(shard)
    rep = DTensor.from_local(torch.tensor(2.5), mesh, [Replicate()])
    part = DTensor.from_local(torch.tensor(7.0), mesh, [Partial()])
    assert not is_partial(rep) and is_partial(part) and local(t) is t
    values = _fetch([rep, torch.tensor(1.0), part])
    assert values[:2] == [2.5, 1.0] and math.isnan(values[2])  # partial: unknown, never wrong


def test_clip_records_a_partial_total_norm_per_rank(mesh):
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor._ops._math_ops import _NormPartial

    from ddp_doctor.probe.instruments import clip
    from ddp_doctor.probe.state import PROBE
    from ddp_doctor.probe.steps import StepAccumulator

    total = DTensor.from_local(torch.tensor(5.0), mesh, [_NormPartial(norm_type=2)])
    assert clip._partial_norm_type(total) == 2.0
    saved = PROBE.steps, PROBE.options, PROBE.owner_pid
    try:
        from pathlib import Path

        from ddp_doctor.probe.options import ProbeOptions

        PROBE.options, PROBE.owner_pid, PROBE.steps = (
            ProbeOptions(run_dir=Path("unused")),
            -2,
            StepAccumulator(),
        )
        clip._clipped.__wrapped__((None, 1.0), {}, total)  # the body, without the guard
        (entry,) = PROBE.steps.clip
        assert entry["total_norm"] is None and entry["norm_type"] == 2.0
        assert torch.equal(entry["total_norm_shard"], torch.tensor(5.0))
        assert not isinstance(entry["total_norm_shard"], DTensor)
    finally:
        PROBE.steps, PROBE.options, PROBE.owner_pid = saved
