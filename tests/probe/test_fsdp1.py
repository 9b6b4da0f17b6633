"""FSDP1 (`FullyShardedDataParallel`) and HSDP under `ddp-doctor run` (gloo, 2 ranks, `no_sync`):
sync pattern, LOCAL norms and sharded GLOBAL norms against a direct computation, the runtime
`fsdp-clip-wrong` finding, and unchanged numerics."""

from __future__ import annotations

import pytest
import torch

from ddp_doctor.analysis.diagnose import diagnose
from probe.helpers import close, kind, read_rank, run_plain, run_probe, torchrun
from probe.replay import replay, toy

WORLD = 2
HSDP_WORLD = 4  # 2 replicas × 2 shards


def _sgd(params):
    return torch.optim.SGD(params, lr=toy.LR, momentum=0.9)


def _finding(out, fid):
    return next(f for f in diagnose(out).findings if f.id == fid)


def test_fsdp1_torch_clip_on_shards_is_confirmed_with_norms_matching_a_direct_computation(tmp_path):
    out = tmp_path / "run"
    run_probe(out, torchrun("fsdp1.py", "FULL_SHARD", "torch"))
    want = replay(WORLD, _sgd)[0]  # step 0 is before any clipping changed the parameters
    steps = [kind(read_rank(out, rank), "step") for rank in range(WORLD)]
    for rank in range(WORLD):
        (cfg,) = kind(read_rank(out, rank), "config", "fsdp")
        assert (cfg["version"], cfg["sharding_strategy"], cfg["shard_group_size"], cfg["replicas"]) == (
            1,
            "FULL_SHARD",
            2,
            1,
        )
        assert all(s["micro_steps"] == toy.ACCUM and s["sync"] == [0, 1] for s in steps[rank])
        assert close(steps[rank][0]["grad_sq_local"][-1], want.local_sq[rank])
        # each rank's torch.nn.utils clip saw only its shard: its total norm is the shard's norm
        assert close(steps[rank][0]["clip"][0]["total_norm"] ** 2, steps[rank][0]["grad_sq_global"][-1])
    assert close(sum(s[0]["grad_sq_global"][-1] for s in steps), want.global_sq)
    finding = _finding(out, "fsdp-clip-wrong")
    assert finding.status == "confirmed"
    assert close(finding.evidence["full_grad_norm"] ** 2, want.global_sq)
    assert len(set(finding.evidence["rank_clip_norms"].values())) == WORLD
    # each rank checksums a different shard: no false replica-divergence
    assert all(kind(read_rank(out, r), "config", "fsdp")[0]["shard_rank"] == r for r in range(WORLD))
    assert _finding(out, "replica-divergence").status == "not-measured"


@pytest.mark.slow
def test_hsdp_with_the_fsdp_clip_method_is_ruled_out_and_leaves_parameters_bit_identical(tmp_path):
    out = tmp_path / "run"
    run_probe(
        out, torchrun("fsdp1.py", "HYBRID_SHARD", "method", str(tmp_path / "probed.pt"), nproc=HSDP_WORLD)
    )
    run_plain(torchrun("fsdp1.py", "HYBRID_SHARD", "method", str(tmp_path / "plain.pt"), nproc=HSDP_WORLD))
    probed, plain = torch.load(tmp_path / "probed.pt"), torch.load(tmp_path / "plain.pt")
    assert probed.keys() == plain.keys() and all(torch.equal(probed[k], plain[k]) for k in probed)
    expected = replay(HSDP_WORLD, _sgd, max_norm=0.5)
    steps = [kind(read_rank(out, rank), "step") for rank in range(HSDP_WORLD)]
    (cfg,) = kind(read_rank(out, 0), "config", "fsdp")
    assert cfg["hsdp"] and cfg["shard_group_size"] == 2 and cfg["replicas"] == 2
    for i, want in enumerate(expected):
        for rank in range(HSDP_WORLD):
            assert close(steps[rank][i]["grad_sq_local"][-1], want.local_sq[rank])
            assert close(steps[rank][i]["clip"][0]["total_norm"] ** 2, want.global_sq)
        # replicated shards: Σ_ranks / replicas is the full gradient's squared norm
        assert close(sum(s[i]["grad_sq_global"][-1] for s in steps) / 2, want.global_sq)
    assert _finding(out, "fsdp-clip-wrong").status == "ruled-out"
    # replicas of the same shard (ranks 0/2, 1/3) are compared, and agree
    replica = _finding(out, "replica-divergence")
    assert replica.status == "ruled-out" and "same FSDP1 shard" in replica.summary
