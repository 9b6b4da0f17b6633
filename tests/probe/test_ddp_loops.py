"""Plain-PyTorch DDP loops under `ddp-doctor run` (gloo, 2 ranks): what each rank records is
checked against a direct single-process computation of the same training (replay.py)."""

from __future__ import annotations

import math

import pytest
import torch

from probe.helpers import close, kind, rank_files, read_rank, run_plain, run_probe, torchrun
from probe.replay import replay, shard_batches, toy

pytestmark = pytest.mark.distributed  # starts process groups (gloo ranks)

WORLD = 2
N_STEPS = toy.EPOCHS * (toy.N_SAMPLES // WORLD // toy.BATCH) // toy.ACCUM


@pytest.fixture(scope="module")
def no_sync_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("no_sync")
    run_probe(base / "run", torchrun("plain_no_sync.py", str(base / "probed.pt")), "--every", "1")
    return base


def _steps(out, rank):
    return kind(read_rank(out, rank), "step")


def _assert_matches_replay(out, expected, scale_free=True):
    for rank in range(WORLD):
        steps = _steps(out, rank)
        assert [s["step"] for s in steps] == list(range(len(expected)))
        for got, want in zip(steps, expected):
            assert got["micro_steps"] == toy.ACCUM
            assert got["sync"][:-1] == [0] * (toy.ACCUM - 1) and got["sync"][-1] >= 1
            assert got["lr"] == [pytest.approx(want.lr)]
            assert got["skipped"] == want.skipped
            if want.skipped:
                continue
            assert all(close(a, b) for a, b in zip(got["losses"], want.losses[rank]))
            assert got["grad_sq_local"][:-1] == [None] * (toy.ACCUM - 1)
            assert close(got["grad_sq_local"][-1], want.local_sq[rank])
            assert close(got["grad_sq_global"][-1], want.global_sq)


def test_no_sync_loop_records_accumulation_sync_pattern_norms_and_lr(no_sync_run):
    expected = replay(
        WORLD,
        lambda p: torch.optim.SGD(p, lr=toy.LR, momentum=0.9),
        lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5),
    )
    assert len(expected) == N_STEPS
    _assert_matches_replay(no_sync_run / "run", expected)
    steps = _steps(no_sync_run / "run", 0)
    assert [s["zero_grad"] for s in steps] == [0] + [1] * (N_STEPS - 1)
    # zero_grad right after step(): before the next window's first backward, so it wipes nothing
    assert [s["zero_grad_after_backward"] for s in steps] == [0] * N_STEPS
    assert [s["sched_steps"] for s in steps] == [0] + [1] * (N_STEPS - 1)


def test_no_sync_loop_records_sampler_indices_per_epoch_and_distinct_input_hashes(no_sync_run):
    out = no_sync_run / "run"
    hashes = []
    for rank in range(WORLD):
        records = read_rank(out, rank)
        samplers = kind(records, "sampler")
        assert [s["epoch"] for s in samplers] == list(range(toy.EPOCHS))
        # one sampler; each record carries what the previous epoch drew and the steps it fed
        assert {s["sampler"] for s in samplers} == {0} and all(s["shuffle"] for s in samplers)
        assert samplers[0]["prev_drawn"] is None and samplers[0]["prev_steps"] is None
        for prev, s in zip(samplers, samplers[1:]):
            assert s["prev_drawn"] == prev["n"] and s["prev_steps"] == s["step"] - prev["step"]
        for s in samplers:
            indices = [i for batch in shard_batches(WORLD, rank, s["epoch"]) for i in batch]
            assert s["head"] == indices[:32] and s["n"] == len(indices)
        (config,) = kind(records, "config", "sampler")
        assert config["shuffle"] is True and config["num_replicas"] == WORLD and config["rank"] == rank
        hashes.append([h for s in kind(records, "step") for h in s["input_hashes"]])
        assert all(s["samples"] == [toy.BATCH] * toy.ACCUM for s in kind(records, "step"))
    assert not set(hashes[0]) & set(hashes[1])  # ranks read different micro-batches


def test_input_hash_is_the_documented_device_side_hash(no_sync_run):
    from ddp_doctor.probe.instruments.data import input_hash
    from ddp_doctor.probe.steps import _hash_hex

    x, _ = toy.make_dataset()[shard_batches(WORLD, 0, 0)[0]]
    first = _steps(no_sync_run / "run", 0)[0]["input_hashes"][0]
    assert first == _hash_hex(int(input_hash(x)), tuple(x.shape))


def test_no_sync_loop_config_replicas_and_header(no_sync_run):
    out = no_sync_run / "run"
    assert [p.name for p in rank_files(out)] == ["rank-00000.jsonl", "rank-00001.jsonl"]  # no agent file
    totals = []
    for rank in range(WORLD):
        records = read_rank(out, rank)
        header = records[0]
        assert header["kind"] == "header" and header["rank"] == rank and header["world_size"] == WORLD
        (ddp,) = kind(records, "config", "ddp")
        assert ddp["find_unused_parameters"] is False and ddp["bucket_cap_mb"] == 25.0
        assert ddp["n_trainable_numel"] == sum(p.numel() for p in toy.make_model().parameters())
        (opt,) = kind(records, "config", "optimizer")
        assert opt["type"] == "SGD" and opt["groups"][0]["momentum"] == 0.9
        replicas = kind(records, "replica")
        assert [r["step"] for r in replicas] == list(range(N_STEPS))
        totals.append([r["total"] for r in replicas])
        assert records[-1]["kind"] == "end" and records[-1]["steps"] == N_STEPS
        assert not kind(records, "probe_error")
    assert totals[0] == totals[1]  # DDP replicas are bit-identical


def test_probe_leaves_final_parameters_bit_identical(no_sync_run):
    plain = no_sync_run / "plain.pt"
    run_plain(torchrun("plain_no_sync.py", str(plain)))
    a, b = torch.load(plain), torch.load(no_sync_run / "probed.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_replica_checksum_matches_final_parameters(no_sync_run):
    from ddp_doctor.probe.instruments.replicas import _bits_sum, _wrap32

    records = read_rank(no_sync_run / "run", 0)
    final = torch.load(no_sync_run / "probed.pt")
    last = kind(records, "replica")[-1]
    assert last["step"] == N_STEPS - 1  # written after the last optimizer step: the final parameters
    (names,) = kind(records, "config", "params")
    assert names["names"] == list(final)
    assert last["params"] == [_wrap32(int(_bits_sum(final[name]))) for name in names["names"]]


def test_failing_instruments_are_recorded_once_and_training_is_unchanged(tmp_path, no_sync_run):
    from probe.helpers import base_env

    failing = ["gradsync", "data", "scheduler"]
    run_probe(
        tmp_path / "run",
        torchrun("plain_no_sync.py", str(tmp_path / "p.pt")),
        env=base_env(DDP_DOCTOR_PROBE_FAULT=",".join(failing)),
    )
    probed, reference = torch.load(tmp_path / "p.pt"), torch.load(no_sync_run / "probed.pt")
    assert all(torch.equal(probed[k], reference[k]) for k in reference)
    for rank in range(WORLD):
        records = read_rank(tmp_path / "run", rank)
        errors = kind(records, "probe_error")
        assert sorted(e["instrument"] for e in errors) == sorted(failing)
        assert all("fault injected" in e["error"] for e in errors)
        steps = kind(records, "step")  # the other instruments go on recording
        assert len(steps) == N_STEPS and all(s["micro_steps"] == toy.ACCUM for s in steps)
        assert all(s["grad_sq_local"] == [None] * toy.ACCUM for s in steps)


def test_nanogpt_toggle_with_adamw_warmup_clip_and_a_dataloader_worker(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("nanogpt_toggle.py", str(tmp_path / "p.pt")), "--level", "full", "--every", "2")
    expected = replay(
        WORLD,
        lambda p: torch.optim.AdamW(p, lr=1e-2, eps=1e-8, betas=(0.9, 0.95), weight_decay=0.1),
        lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / 2)),
        max_norm=1.0,
    )
    _assert_matches_replay(out, expected)
    assert len(rank_files(out)) == WORLD  # the DataLoader worker wrote nothing
    for rank in range(WORLD):
        records = read_rank(out, rank)
        (opt,) = kind(records, "config", "optimizer")
        assert (
            opt["type"] == "AdamW"
            and opt["groups"][0]["betas"] == [0.9, 0.95]
            and opt["groups"][0]["eps"] == 1e-8
        )
        for step, want in zip(kind(records, "step"), expected):
            (clip,) = step["clip"]
            assert clip["max_norm"] == 1.0 and clip["after_unscale"] is False
            assert close(clip["total_norm"], math.sqrt(want.global_sq))
        fulls = kind(records, "full")
        assert [f["step"] for f in fulls] == [0, 2]
        for full in fulls:
            want = expected[full["step"]]
            groups = full["groups"]
            assert set(groups) == {"other"}  # nn.Sequential names ("0.weight") match no layer group
            # The optimizer sees the clipped gradient: norm min(total, max_norm).
            assert close(groups["other"]["grad_norm"], min(math.sqrt(want.global_sq), 1.0), rel=1e-4)
            assert groups["other"]["numel"] == 161 and groups["other"]["update_norm"] > 0
            (adam,) = full["adam"]
            assert adam["eps"] == 1e-8 and adam["numel"] == 161 and 0.0 <= adam["frac_v_below_eps2"] <= 1.0


def test_grad_scaler_skip_scale_trace_unscaled_norms_and_clip_order(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("grad_scaler.py", str(tmp_path / "p.pt")))
    expected = replay(WORLD, lambda p: torch.optim.SGD(p, lr=toy.LR), max_norm=5.0, skip_steps=(1,))
    _assert_matches_replay(out, expected)
    for rank in range(WORLD):
        records = read_rank(out, rank)
        (config,) = kind(records, "config", "scaler")
        assert config["init_scale"] == 2.0**10 and config["enabled"] is True
        steps = kind(records, "step")
        assert [s["skipped"] for s in steps] == [i == 1 for i in range(N_STEPS)]
        assert [s["found_inf"] for s in steps] == [i == 1 for i in range(N_STEPS)]
        assert [s["scale"] for s in steps] == [2.0**10, 2.0**9, 2.0**9, 2.0**9]
        assert steps[1]["nonfinite"]["where"] == "loss" and steps[1]["nonfinite"]["micro"] == 0
        assert all(s["unscale_calls"] == 1 for s in steps)
        assert all(c["after_unscale"] and c["scaler"] for s in steps for c in s["clip"])
        assert steps[0]["losses"] == [pytest.approx(v, rel=1e-5) for v in expected[0].losses[rank]]
