"""replica-divergence on sharded FSDP1/HSDP runs: each rank checksums only its own shard of the flat
parameters, so only ranks holding the same shard (`config`/`fsdp` `shard_rank`) are compared."""

from __future__ import annotations

import json
from pathlib import Path

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.rundir.records import rank_file


def _shard(run: Path, world: int, shard_group: int, strategy: str, drift_rank: int | None = None) -> None:
    """Rewrite a synthetic run as FSDP1 with `shard_group` ranks per shard group: a rank's checksums
    are those of its shard (`shard_rank`), `drift_rank` holds a replica that drifted."""
    for rank in range(world):
        path = rank_file(run, rank)
        shard_rank = rank % shard_group
        out = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("kind") == "replica":
                rec["params"] = [p + 7 * shard_rank + (1 if rank == drift_rank else 0) for p in rec["params"]]
            out.append(json.dumps(rec))
            if rec.get("kind") == "header":
                cfg = {
                    "kind": "config",
                    "what": "fsdp",
                    "step": 0,
                    "version": 1,
                    "sharding_strategy": strategy,
                    "hsdp": strategy == "HYBRID_SHARD",
                    "shard_group_size": shard_group,
                    "replicas": world // shard_group,
                    "shard_rank": shard_rank,
                }
                out.append(json.dumps(cfg))
        path.write_text("\n".join(out) + "\n")


def _replica(run: Path):
    return next(f for f in diagnose(run).findings if f.id == "replica-divergence")


def test_full_shard_checksums_are_not_compared_across_shards(make_run):
    run = make_run(world_size=2)
    _shard(run, 2, 2, "FULL_SHARD")
    f = _replica(run)
    assert f.status == "not-measured", f.summary
    assert "FULL_SHARD" in f.summary and f.evidence["shard_group_size"] == 2


def test_hsdp_compares_ranks_holding_the_same_shard(make_run):
    run = make_run(world_size=4)
    _shard(run, 4, 2, "HYBRID_SHARD")
    f = _replica(run)
    assert f.status == "ruled-out", f.summary
    assert "same FSDP1 shard" in f.summary


def test_hsdp_replica_that_drifted_is_confirmed_against_its_own_shard(make_run):
    run = make_run(world_size=4)
    _shard(run, 4, 2, "HYBRID_SHARD", drift_rank=3)
    f = _replica(run)
    assert f.status == "confirmed", f.summary
    assert f.evidence["ranks"] == [1, 3]
