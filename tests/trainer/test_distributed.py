"""Real gloo groups (2 ranks): DDP equals one process on the global batch; multi-rank faults show.

One group runs every scenario (forked ranks start fast); each test asserts on its part.
Tolerance: fp32, same micro-batches, only the reduction order differs (all-reduce vs one process),
so gradients must agree to EQUIV_RTOL relative (measured ~1e-7) and parameters after one AdamW step
to the same bound.
"""

from __future__ import annotations

import pytest
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

from ddp_doctor.trainer.loop import build, next_micro_batches, train_step

from .distributed import run_ranks
from .helpers import cfg, global_micro_batches, grads, max_rel_error, params

pytestmark = pytest.mark.distributed  # starts process groups (gloo ranks)

WORLD = 2
EQUIV_RTOL = 1e-5
EQUIVALENT = {  # name -> TrainConfig changes; each must match the single-process reference
    "ddp": {},
    "ddp-sync-every-micro": {"faults": ("sync-every-micro",)},
    "ddp-bucket-view-small-buckets": {"gradient_as_bucket_view": True, "bucket_cap_mb": 0.25},
    "zero1": {"strategy": "zero1"},
    "fsdp": {"strategy": "fsdp"},
}
ONE_STEP_FAULTS = ("replica-desync", "bypass-ddp", "sync-toggle-after-forward", "rank0-loss-log")
# The tiny model's gradients fit in one 25 MB DDP bucket: one all-reduce call per synced micro-step.
SYNC_CASES = {
    "healthy": (),
    "sync-every-micro": ("sync-every-micro",),
    "bypass-ddp": ("bypass-ddp",),
    "sync-toggle-after-forward": ("sync-toggle-after-forward",),
}


def _all_reduces_per_step(faults: tuple[str, ...], steps: int = 1) -> float:
    """Bucket all-reduces per optimizer step, counted by a DDP comm hook around the default one."""
    state = build(cfg(faults=faults))
    calls = []

    def counting_hook(_, bucket):
        calls.append(bucket.index())
        return allreduce_hook(None, bucket)

    state.ddp.register_comm_hook(None, counting_hook)
    for _ in range(steps):
        train_step(state, next_micro_batches(state))
    return len(calls) / steps


def _scenarios() -> dict[str, object]:
    rank = dist.get_rank()
    out: dict[str, object] = {}
    for name, changes in EQUIVALENT.items():
        c = cfg(**changes)
        state = build(c)
        mine = global_micro_batches(c, WORLD)[rank * c.accum : (rank + 1) * c.accum]
        train_step(state, mine)
        out[name] = (grads(state.raw_model), params(state.raw_model))
    for fault in ONE_STEP_FAULTS:
        c = cfg(faults=(fault,), fault_step=0)
        state = build(c)
        result = train_step(state, global_micro_batches(c, WORLD)[rank * c.accum : (rank + 1) * c.accum])
        out[fault] = (grads(state.raw_model), params(state.raw_model), result)
    for faults in ((), ("no-sampler",)):
        state = build(cfg(faults=faults))
        out["indices" + "+".join(faults)] = [int(i) for b in next_micro_batches(state) for i in b["index"]]
    out["all-reduces"] = {name: _all_reduces_per_step(f) for name, f in SYNC_CASES.items()}
    state = build(cfg(faults=("nan-at-step",), fault_step=0))
    train_step(state, next_micro_batches(state))
    out["nan"] = any(bool(p.isnan().any()) for p in state.raw_model.parameters())
    return out


@pytest.fixture(scope="module")
def ranks() -> list[dict[str, object]]:
    return run_ranks(_scenarios, WORLD)


@pytest.fixture(scope="module")
def reference() -> tuple[dict, dict]:
    """One process, no group, all WORLD * accum micro-batches of the global batch."""
    c = cfg()
    state = build(c)
    train_step(state, global_micro_batches(c, WORLD))
    return grads(state.raw_model), params(state.raw_model)


@pytest.mark.parametrize("name", list(EQUIVALENT))
def test_one_optimizer_step_on_two_ranks_equals_one_process_on_the_global_batch(
    ranks, reference, name
) -> None:
    ref_grads, ref_params = reference
    for rank in ranks:
        g, p = rank[name]
        assert max_rel_error(g, ref_grads) < EQUIV_RTOL
        assert max_rel_error(p, ref_params) < EQUIV_RTOL


def test_healthy_ddp_replicas_are_bit_identical(ranks) -> None:
    (g0, p0), (g1, p1) = ranks[0]["ddp"], ranks[1]["ddp"]
    assert all((g0[k] == g1[k]).all() for k in g0)  # the all-reduced gradient is the same everywhere
    assert all((p0[k] == p1[k]).all() for k in p0)


@pytest.mark.parametrize("fault", ["replica-desync", "bypass-ddp", "sync-toggle-after-forward"])
def test_fault_leaves_replicas_with_different_parameters(ranks, fault) -> None:
    p0, p1 = ranks[0][fault][1], ranks[1][fault][1]
    assert max_rel_error(p0, p1) > 1e-6


@pytest.mark.parametrize("fault", ["bypass-ddp", "sync-toggle-after-forward"])
def test_fault_leaves_gradients_not_all_reduced(ranks, fault) -> None:
    assert max_rel_error(ranks[0][fault][0], ranks[1][fault][0]) > 1e-3


def test_rank0_loss_log_logs_rank_zeros_local_loss_not_the_global_one(ranks) -> None:
    r0, r1 = ranks[0]["rank0-loss-log"][2], ranks[1]["rank0-loss-log"][2]
    assert r0.loss == r1.loss  # the all-reduced value is the same everywhere
    assert abs(r0.logged_loss - r0.loss) > 1e-4


def test_without_a_sampler_every_rank_reads_the_same_samples(ranks) -> None:
    assert ranks[0]["indicesno-sampler"] == ranks[1]["indicesno-sampler"]
    assert not set(ranks[0]["indices"]) & set(ranks[1]["indices"])


def test_a_nan_on_rank_zero_reaches_rank_ones_parameters_through_the_all_reduce(ranks) -> None:
    assert ranks[0]["nan"] and ranks[1]["nan"]


def test_sync_pattern_all_reduces_once_per_step_unless_a_fault_changes_it(ranks) -> None:
    counts = ranks[0]["all-reduces"]
    assert counts["healthy"] == 1  # no_sync on the accum - 1 earlier micro-steps
    assert counts["sync-every-micro"] == cfg().accum
    assert counts["bypass-ddp"] == 0
    # The flag set after the forward only takes effect in the NEXT forward: the first micro-step
    # (flag still True from the previous step's last one) syncs, the final one does not.
    assert counts["sync-toggle-after-forward"] == 1


def test_four_ranks_with_accumulation_equal_one_process(reference_world4) -> None:
    ranks4, (ref_grads, ref_params) = reference_world4
    for g, p in ranks4:
        assert max_rel_error(g, ref_grads) < EQUIV_RTOL
        assert max_rel_error(p, ref_params) < EQUIV_RTOL


def _ddp_step_world4() -> tuple[dict, dict]:
    c = cfg(accum=2)
    state = build(c)
    rank = dist.get_rank()
    train_step(state, global_micro_batches(c, 4)[rank * c.accum : (rank + 1) * c.accum])
    return grads(state.raw_model), params(state.raw_model)


@pytest.fixture(scope="module")
def reference_world4():
    c = cfg(accum=2)
    state = build(c)
    train_step(state, global_micro_batches(c, 4))
    return run_ranks(_ddp_step_world4, 4), (grads(state.raw_model), params(state.raw_model))


def _compiled_step(mode: str) -> dict:
    c = cfg(clip=None, compile=mode)
    state = build(c)
    rank = dist.get_rank()
    train_step(state, global_micro_batches(c, WORLD)[rank * c.accum : (rank + 1) * c.accum])
    return grads(state.raw_model)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["before_ddp", "after_ddp"])
def test_compiled_ddp_step_matches_one_eager_process(mode) -> None:
    c = cfg(clip=None)
    state = build(c)
    train_step(state, global_micro_batches(c, WORLD))
    for rank_grads in run_ranks(_compiled_step, WORLD, mode):
        # Inductor fuses and reorders float ops: agreement to float32 noise, not bit-for-bit.
        assert max_rel_error(rank_grads, grads(state.raw_model)) < 1e-4
