"""The tolerance formula and the stage-by-stage comparison, on synthetic fingerprints (no ranks started)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from ddp_doctor.equiv import render, stages, tolerance, verdict
from ddp_doctor.equiv.stages import SUMSQ, RankStep, RunPrints, StepFacts, StepPrints
from ddp_doctor.probe.instruments.fingerprints import clean_name, sample_indices

# --- tolerance ----------------------------------------------------------------------------------


def test_gamma_is_n_u_over_one_minus_n_u_and_has_no_bound_past_one():
    u = 2.0**-24
    assert tolerance.gamma(1000, u) == pytest.approx(1000 * u / (1 - 1000 * u), rel=1e-15)
    assert tolerance.gamma(2**24, u) == math.inf
    assert tolerance.gamma(0, u) == 0


def test_terms_count_loss_terms_accumulation_and_ranks():
    assert tolerance.terms(loss_terms=183, accum=4, world=1) == 188
    assert tolerance.terms(loss_terms=183, accum=2, world=2) == 188
    assert tolerance.terms(loss_terms=0, accum=0, world=0) == 3  # never below one term each


def test_the_lower_precision_of_autocast_sets_u():
    fp32 = tolerance.RunShape(world=2, accum=2, loss_terms=100, dtype="float32")
    bf16 = tolerance.RunShape(world=2, accum=2, loss_terms=100, dtype="float32", compute_dtype="bfloat16")
    assert fp32.u == 2.0**-24 and bf16.u == 2.0**-8
    t = tolerance.tolerance(fp32, bf16, "SGD")
    assert t.grad == pytest.approx(tolerance.gamma(fp32.n, 2.0**-24) + tolerance.gamma(bf16.n, 2.0**-8))
    assert t.update == pytest.approx(2 * t.grad) and not t.adam


def test_adam_type_update_margin_is_the_square_root_and_is_said():
    shape = tolerance.RunShape(world=1, accum=8, loss_terms=4000, dtype="float32")
    t = tolerance.tolerance(shape, shape, "AdamW")
    assert t.adam and t.update == pytest.approx(math.sqrt(t.grad))
    assert "a margin, not a bound" in t.formula() and str(shape.n) in t.formula()


def test_the_bound_holds_for_sums_in_another_order():
    """Σ in float32 in two orders differs by ≤ (γ_a + γ_b)·Σ|x| (what the comparison relies on)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for n in (10, 1000, 100_000):
        x = rng.standard_normal(n).astype(np.float32)
        a = np.float32(0)
        for v in x:  # sequential
            a = np.float32(a + v)
        b = x.reshape(-1, 10).sum(axis=1, dtype=np.float32).sum(dtype=np.float32) if n % 10 == 0 else x.sum()
        bound = 2 * tolerance.gamma(n, 2.0**-24) * float(np.abs(x.astype(np.float64)).sum())
        assert abs(float(a) - float(b)) <= bound


# --- synthetic fingerprints ---------------------------------------------------------------------


def _fp(values: list[float]) -> list[float]:
    idx = sample_indices(len(values))
    return [
        sum(values),
        sum(v * v for v in values),
        sum(abs(v) for v in values),
        max(abs(v) for v in values),
        *[values[i] for i in idx],
    ]


def _grads(seed: int, n: int = 64) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(0, 1e-2) for _ in range(n)]


def _run(
    world: int,
    per_rank_local: list[dict[str, list[float]]],
    reduced: list[dict[str, list[float]]] | None = None,
    hashes: list[list[str]] | None = None,
    sync: list[list[int]] | None = None,
    zero_grad: int = 0,
    accum: int = 1,
) -> RunPrints:
    names = sorted(per_rank_local[0])
    if reduced is None:  # a correct all-reduce: the mean of the ranks' local gradients
        mean = {
            n: [sum(r[n][i] for r in per_rank_local) / world for i in range(len(per_rank_local[0][n]))]
            for n in names
        }
        reduced = [mean] * world
    params = {n: [0.1 * (i + 1) for i in range(len(per_rank_local[0][n]))] for n in names}
    ranks = {}
    for r in range(world):
        ranks[r] = RankStep(
            local=[_fp(per_rank_local[r][n]) for n in names],
            reduced=[_fp(reduced[r][n]) for n in names],
            clipped=[_fp(reduced[r][n]) for n in names],
            param=[_fp(params[n]) for n in names],
            update=[_fp([-1e-3 * g for g in reduced[r][n]]) for n in names],
            micro_steps=accum,
            sample_hashes=(hashes[r] if hashes else [f"{r:04x}{i:012x}" for i in range(2)]),
        )
    facts = StepFacts(
        sync={r: (sync[r] if sync else [0] * (accum - 1) + [1]) for r in range(world)},
        zero_grad_after_backward={r: zero_grad for r in range(world)},
        tokens={r: 100.0 / world for r in range(world)},
        micro={r: accum for r in range(world)},
    )
    step = StepPrints(0, names, [len(per_rank_local[0][n]) for n in names], ["float32"] * len(names), ranks)
    return RunPrints(Path(f"w{world}"), world, {0: step}, {0: facts}, "SGD", [])


def _split(total: dict[str, list[float]], world: int) -> list[dict[str, list[float]]]:
    """Per-rank local gradients whose mean is `total` (as a correctly scaled loss gives)."""
    out = []
    for r in range(world):
        noise = {n: _grads(100 + r, len(v)) for n, v in total.items()}
        out.append(
            {
                n: [g + (noise[n][i] if r < world - 1 else 0) for i, g in enumerate(v)]
                for n, v in total.items()
            }
        )
    # make the mean exact: the last rank takes the remainder
    for n, v in total.items():
        for i in range(len(v)):
            out[-1][n][i] = world * v[i] - sum(out[r][n][i] for r in range(world - 1))
    return out


G = {"layer.weight": _grads(1), "layer.bias": _grads(2, 8)}
ONE_HASHES = [[f"{i:016x}" for i in range(4)]]
TWO_HASHES = [[f"{i:016x}" for i in (0, 2)], [f"{i:016x}" for i in (1, 3)]]


def test_a_correct_split_is_equivalent_at_every_stage():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    b = _run(2, _split(G, 2), hashes=TWO_HASHES, accum=2)
    e = verdict.compare(a, b)
    assert e.verdict == "equivalent" and e.exit_code == 0
    assert [s.status for s in e.stages] == ["equal"] * 5
    assert e.data[0].status == "same" and e.data[0].samples_a == 4


def test_local_gradients_twice_too_large_break_at_local_with_the_accumulation_ratio():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    doubled = {n: [2 * g for g in v] for n, v in G.items()}
    b = _run(2, _split(doubled, 2), hashes=TWO_HASHES, accum=2)
    e = verdict.compare(a, b)
    assert e.verdict == "break" and e.exit_code == 1
    fb = e.first_break
    assert fb is not None and fb.stage == "local" and fb.ratio == pytest.approx(2.0)
    assert "accum-loss-unscaled" not in fb.causes or fb.factor  # named through a factor only
    assert "grad-scale-wrong" in fb.causes and any("×N" in f for f in fb.factor)


def test_the_accumulation_ratio_names_accum_loss_unscaled():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    half = {n: [g / 2 for g in v] for n, v in G.items()}  # loss × accum: 2 at world 2, 4 at world 1
    b = _run(2, _split(half, 2), hashes=TWO_HASHES, accum=2)
    fb = verdict.compare(a, b).first_break
    assert fb is not None and fb.stage == "local" and fb.ratio == pytest.approx(0.5)
    assert "accum-loss-unscaled" in fb.causes


def test_unsynced_ranks_break_at_reduced_and_name_the_sync_pattern():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    local = _split(G, 2)
    no_sync = _run(2, local, reduced=local, hashes=TWO_HASHES, sync=[[0, 0], [0, 0]], accum=2)
    fb = verdict.compare(a, no_sync).first_break
    assert fb is not None and fb.stage == "reduced" and fb.causes == ["ddp-bypassed"]
    assert "disagree" in fb.note
    toggled = _run(2, local, reduced=local, hashes=TWO_HASHES, sync=[[1, 0], [1, 0]], accum=2)
    fb = verdict.compare(a, toggled).first_break
    assert fb is not None and fb.causes == ["no-sync-after-forward"]


def test_a_summed_all_reduce_is_named_by_the_within_run_check():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    local = _split(G, 2)
    summed = {n: [2 * g for g in v] for n, v in G.items()}
    b = _run(2, local, reduced=[summed, summed], hashes=TWO_HASHES, accum=2)
    fb = verdict.compare(a, b).first_break
    assert fb is not None and fb.stage == "reduced" and fb.ratio == pytest.approx(2.0)
    assert "not the mean" in fb.note and "grad-scale-wrong" in fb.causes


def test_an_irregular_local_difference_with_zero_grad_evidence_names_zero_grad_inside_accum():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    other = {n: _grads(7, len(v)) for n, v in G.items()}
    b = _run(2, _split(other, 2), hashes=TWO_HASHES, zero_grad=1, accum=2)
    fb = verdict.compare(a, b).first_break
    assert fb is not None and fb.stage == "local" and fb.ratio is None
    assert fb.causes == ["zero-grad-inside-accum"]


def test_different_data_is_said_instead_of_a_break():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    other = {n: _grads(9, len(v)) for n, v in G.items()}
    b = _run(2, _split(other, 2), hashes=[["a" * 16, "1" * 16], ["2" * 16, "f" * 16]], accum=2)
    e = verdict.compare(a, b)
    assert e.verdict == "undecided" and e.exit_code == 2 and e.first_break is None
    assert e.data_differs_at == 0 and e.data[0].only_a == 4 and e.data[0].only_b == 4
    assert {s.status for s in e.stages} == {"not judged"}
    assert [r.code for r in e.data_reasons] == ["no_sampler", "no_sampler"]  # neither run recorded one


def _sampler(world: int, n: int, drop_last: bool = False, **extra: object) -> dict:
    return {"what": "sampler", "sampler": 0, "type": "DistributedSampler", "shuffle": True, "seed": 0,
            "drop_last": drop_last, "num_replicas": world, "rank": 0, "dataset_len": n, **extra}  # fmt: skip


def _data_reasons(a: RunPrints, b: RunPrints) -> dict[str, verdict.DataReason]:
    e = verdict.compare(a, b)
    assert e.verdict == "undecided" and e.data_differs_at == 0
    return {f"{r.code}{r.run}": r for r in e.data_reasons}


def test_different_data_says_why_padding_and_epoch_length():
    """13 samples: one rank's epoch is all 13, two ranks pad to 14 (drop_last=False); the padded
    copy shows as a repeated hash in B's global batch."""
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    b = _run(2, _split(G, 2), hashes=[["0" * 16, "1" * 16], ["0" * 16, "3" * 16]], accum=2)
    a.sampler, b.sampler = _sampler(1, 13), _sampler(2, 13)
    reasons = _data_reasons(a, b)
    assert reasons["paddingB"].values == {"n": 13, "w": 2, "padded": 1}
    assert reasons["epoch_length"].values == {"a": 13, "b": 14}
    assert reasons["repeatsB"].values == {"step": 0, "repeats": 1} and "repeatsA" not in reasons
    text = render.render_text(verdict.compare(a, b))
    assert "drop_last=False pads each epoch by repeating the first 1 indices" in text
    assert "数据集长度 13 不是 W = 2 的倍数" in render.render_text(verdict.compare(a, b), "zh")


def test_different_data_says_why_sampler_settings_custom_or_missing_samplers():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    b = _run(2, _split(G, 2), hashes=[["a" * 16, "1" * 16], ["2" * 16, "f" * 16]], accum=2)
    a.sampler, b.sampler = _sampler(1, 16, seed=1), _sampler(2, 16, drop_last=True, type="MySampler")
    reasons = _data_reasons(a, b)
    assert reasons["sampler_setting"].values["setting"] in ("seed", "drop_last")
    assert {r.values["setting"] for k, r in reasons.items() if k.startswith("sampler_setting")} <= {
        "seed",
        "drop_last",
    }
    assert reasons["custom_samplerB"].values == {"type": "MySampler"}
    assert not any(k.startswith(("padding", "drop_tail", "epoch_length")) for k in reasons)  # 16 % 2 == 0
    b.sampler = None
    assert "no_samplerB" in _data_reasons(a, b)
    a.sampler, b.sampler = _sampler(1, 16), _sampler(2, 16)  # the same samplers: nothing to blame
    assert list(_data_reasons(a, b)) == ["unexplained"]


def _subset(run: RunPrints, keep: set[int]) -> RunPrints:
    """`run` as `equiv --ranks` reads it: only the ranks in `keep`."""
    for step in run.steps.values():
        step.ranks = {r: v for r, v in step.ranks.items() if r in keep}
    run.subset = (min(keep), max(keep))
    return run


def test_a_subset_of_the_ranks_is_compared_per_rank_and_says_what_it_cannot_judge():
    four = [{n: [g * 4 for g in v] for n, v in G.items()}] + [{n: [0.0] * len(v) for n, v in G.items()}] * 3
    a = _run(1, [G], hashes=[[f"{i:016x}" for i in range(8)]], accum=4)
    b = _run(4, four, hashes=[[f"{i:016x}" for i in (r, r + 4)] for r in range(4)], accum=1)
    e = verdict.compare(a, _subset(b, {2, 3}))
    assert e.verdict == "equivalent", e.first_break
    assert {s.stage: s.status for s in e.stages}["local"] == "not judged"
    assert e.data[0].status == "subset" and e.data[0].samples_b == 4
    assert any("ranks 2-3 of 4" in p and "not judged" in p for p in e.problems)
    # rank 3 stepped on its own local gradient: the ranks read disagree at `reduced`
    b = _run(4, four, hashes=[[f"{i:016x}" for i in (r, r + 4)] for r in range(4)], accum=1)
    b.steps[0].ranks[3].reduced = b.steps[0].ranks[3].local
    fb = verdict.compare(a, _subset(b, {2, 3})).first_break
    assert fb is not None and fb.stage == "reduced" and "disagree" in fb.note
    # samples of B's ranks that are not in A's batch: the data differs, no stage is judged
    b = _run(4, four, hashes=[[f"{i:016x}" for i in (r, r + 40)] for r in range(4)], accum=1)
    e = verdict.compare(a, _subset(b, {2, 3}))
    assert e.verdict == "undecided" and e.data[0].status == "differs" and e.data[0].only_b == 2


def test_an_update_scaled_by_an_accumulation_factor_is_the_lr_not_the_gradient():
    """sched-per-micro on the gloo trainer: B's scheduler stepped accum_B times, its warmup lr came
    out accum_B× A's, and the update ratio equals ×accum_B; the gradients matched, so the cause is
    the scheduler, not accum-loss-unscaled."""
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    b = _run(2, _split(G, 2), hashes=TWO_HASHES, accum=2)
    for rs in b.steps[0].ranks.values():
        rs.update = [
            [v * 2 for v in fp[:SUMSQ]] + [fp[SUMSQ] * 4] + [v * 2 for v in fp[SUMSQ + 1 :]]
            for fp in rs.update
        ]
    b.facts[0].sched_steps = {0: 2, 1: 2}
    fb = verdict.compare(a, b).first_break
    assert fb is not None and fb.stage == "update" and fb.ratio == pytest.approx(2.0)
    assert fb.causes == ["scheduler-per-microstep"] and fb.factor == []


def test_shards_merge_into_the_fingerprint_of_the_full_tensor():
    full = _grads(5, 12)
    shards = [full[:6], full[6:]]
    parts = [_fp(x) for x in shards]
    ranks = {r: RankStep([p], [p], [p], [p], [p], 1, [f"{r:016x}"]) for r, p in enumerate(parts)}
    merged = stages.merge_shards(StepPrints(0, ["w"], [6], ["float32"], ranks, sharded=True))
    (only,) = merged.ranks.values()
    assert only.reduced[0] == pytest.approx(_fp(full)[:4]) and only.local == [None]
    assert only.sample_hashes == ["0" * 16, f"{1:016x}"]
    ranks[1] = RankStep(
        [None], [None], [None], [None], [None], 1, []
    )  # a shard missing: unknown, not partial
    assert stages.merge_shards(StepPrints(0, ["w"], [6], ["float32"], ranks, sharded=True)).ranks[
        stages.MERGED_RANK
    ].reduced == [None]


def test_no_fingerprints_is_undecided_with_a_note():
    empty = RunPrints(Path("x"), 2, {}, {}, None, [])
    e = verdict.compare(empty, empty)
    assert e.verdict == "undecided" and any("no fingerprints" in p for p in e.problems)


def test_nan_in_one_run_only_differs_and_in_both_is_equal():
    a = [float("nan"), 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]
    assert max(r[3] for r in verdict.compare_full(a, a)) == 0
    b = [1.0, *a[1:]]
    assert max(r[3] for r in verdict.compare_full(a, b)) == math.inf


def test_a_nan_in_b_only_names_nonfinite_not_a_loss_normalization():
    a = _run(1, [G], hashes=ONE_HASHES, accum=4)
    halves = _split(G, 2)
    halves[0] = {n: [math.nan, *v[1:]] for n, v in halves[0].items()}
    fb = verdict.compare(a, _run(2, halves, hashes=TWO_HASHES, accum=2)).first_break
    assert fb is not None and (fb.step, fb.stage) == (0, "local") and fb.causes == ["nonfinite"]


def test_clean_name_drops_wrapper_components_only():
    assert clean_name("module._orig_mod.model.layers.0.mlp.weight") == "model.layers.0.mlp.weight"
    assert clean_name("_fsdp_wrapped_module.layers.0._checkpoint_wrapped_module.w") == "layers.0.w"
    assert clean_name("model.modules_list.0.w") == "model.modules_list.0.w"


def test_sample_indices_are_fixed_by_the_element_count():
    assert sample_indices(1) == [0] and sample_indices(10) == [0, 3, 6, 9] and sample_indices(0) == []


def test_damaged_fingerprint_records_are_problems_not_exceptions(tmp_path):
    from ddp_doctor.rundir.rankfile import RankData
    from ddp_doctor.rundir.reader import RunData

    data = RankData(rank=0)
    data.records["fingerprint"] = [
        {"kind": "fingerprint", "step": "x"},
        {
            "kind": "fingerprint",
            "step": 0,
            "names": ["w"],
            "reduced": [["nan", 1, "bad", None]],
            "local": "?",
        },
    ]
    run = RunData(path=tmp_path, manifest={}, ranks={0: data}, world_size=1, problems=[], in_progress=False)
    prints = stages.from_run(run)
    assert prints.steps[0].ranks[0].reduced[0] is not None and prints.steps[0].ranks[0].local == [None]
    assert any("without step" in p for p in prints.problems)
    e = verdict.compare(prints, prints)
    assert e.verdict in ("equivalent", "undecided")
