"""TrainConfig's command line round-trips; the Markov data has the entropy floor it claims."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ddp_doctor.trainer.config import TrainConfig, config_from_argv, config_to_argv
from ddp_doctor.trainer.data import IGNORE_INDEX, PAD_TOKEN, MarkovDocuments, MarkovSource, entropy_floor
from ddp_doctor.trainer.faults import FAULT_FINDINGS, FAULTS

ISSUE_FAULTS = [
    "no-sampler",
    "no-set-epoch",
    "loss-unscaled",
    "zero-grad-per-micro",
    "sched-per-micro",
    "sync-every-micro",
    "sync-toggle-after-forward",
    "replica-desync",
    "bypass-ddp",
    "clip-before-unscale",
    "fp16-no-scaler",
    "fp16-overflow",
    "nan-at-step",
    "rank0-loss-log",
    "per-microbatch-mean-loss",
    "lr-too-high",
]


def test_fault_names_are_exactly_the_issues_sixteen_and_map_to_catalog_findings() -> None:
    from ddp_doctor.core.catalog import FINDINGS

    assert list(FAULTS) == ISSUE_FAULTS
    assert set(FAULT_FINDINGS) == set(FAULTS)
    assert set(FAULT_FINDINGS.values()) <= set(FINDINGS)


def test_argv_round_trips_every_kind_of_flag() -> None:
    cfg = config_from_argv(
        [
            "--steps",
            "7",
            "--lr",
            "1e-3",
            "--clip",
            "none",
            "--fault",
            "nan-at-step",
            "--fault",
            "rank0-loss-log",
            "--checkpointing",
            "--strategy",
            "zero1",
            "--out-dir",
            "/tmp/x",
            "--no-progress",
        ]
    )
    assert cfg.steps == 7 and cfg.lr == 1e-3 and cfg.clip is None and cfg.checkpointing
    assert cfg.faults == ("nan-at-step", "rank0-loss-log") and cfg.strategy == "zero1"
    assert config_from_argv(config_to_argv(cfg)) == cfg
    assert config_to_argv(TrainConfig()) == []


def test_fp16_faults_switch_precision_to_fp16_and_unknown_faults_are_rejected() -> None:
    assert TrainConfig(faults=("fp16-overflow",)).precision == "fp16"
    assert TrainConfig(faults=("clip-before-unscale",), clip=None).clip == 1.0
    with pytest.raises(ValueError, match="unknown fault"):
        TrainConfig(faults=("no-such-fault",))
    with pytest.raises(SystemExit):
        config_from_argv(["--precision", "fp8"])


def test_static_graph_with_no_sync_accumulation_is_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="static_graph"):
        TrainConfig(static_graph=True, accum=8)
    assert TrainConfig(static_graph=True, accum=1).static_graph


def test_ddp_only_faults_are_refused_under_fsdp() -> None:
    with pytest.raises(ValueError, match="bypass-ddp"):
        TrainConfig(strategy="fsdp", faults=("bypass-ddp",))


def test_stationary_distribution_is_exact_and_floor_matches_an_empirical_estimate() -> None:
    source = MarkovSource(seed=3)
    p, pi = source.transition, source.stationary
    np.testing.assert_allclose(pi @ p, pi, atol=1e-12)
    assert math.isclose(pi.sum(), 1.0) and np.allclose(p.sum(axis=1), 1.0)
    # Empirical conditional entropy of a long walk: -mean log P(x_t | x_{t-1}).
    walk = source.sample(200_000, np.random.default_rng(0)) - 32
    empirical = -np.log(p[walk[:-1], walk[1:]]).mean()
    assert abs(empirical - source.entropy_floor()) < 0.02
    assert 0.5 < entropy_floor(3) < math.log(256)


def test_documents_vary_in_length_pad_with_ignore_index_and_are_deterministic() -> None:
    docs = MarkovDocuments(num_docs=32, seq_len=64, min_len=4, seed=1)
    lengths = []
    for i in range(len(docs)):
        sample = docs[i]
        valid = sample["labels"] != IGNORE_INDEX
        n = int(valid.sum())
        lengths.append(n)
        assert valid[:n].all() and not valid[n:].any()  # right padding
        assert (sample["input_ids"][n:] == PAD_TOKEN).all()
        assert (sample["input_ids"][1:n] == sample["labels"][: n - 1]).all()  # labels are shifted inputs
    assert len(set(lengths)) > 10 and min(lengths) >= 3 and max(lengths) <= 64
    again = MarkovDocuments(num_docs=32, seq_len=64, min_len=4, seed=1)[5]
    assert (again["input_ids"] == docs[5]["input_ids"]).all()
    assert not (MarkovDocuments(32, 64, 4, seed=2)[5]["input_ids"] == docs[5]["input_ids"]).all()
