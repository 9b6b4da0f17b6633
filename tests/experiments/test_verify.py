"""verify on real gloo ranks: equivalent variants are equal at fp32, known-broken ones differ."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.experiments.verify import FP32_REL_TOL, VerifyConfig, compare, max_diff, variants


@pytest.fixture(scope="module")
def table():
    # 2 ranks, accum 2, 2 optimizer steps on the tiny preset: every default row in one spawn.
    result = CliRunner().invoke(
        app, ["verify", "--world", "2", "--accum", "2", "--steps", "2", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.distributed
def test_equivalent_rows_are_equal_at_fp32(table):
    rows = {r["name"]: r for r in table["rows"]}
    for name in (
        "ddp",
        "eager-repeat",
        "sync-every-micro",
        "bucket-small",
        "bucket-view",
        "find-unused",
        "zero1",
        "fsdp2",
    ):
        assert rows[name]["verdict"] == "equal", rows[name]
        assert rows[name]["grad_rel"] <= FP32_REL_TOL and rows[name]["param_rel"] <= FP32_REL_TOL
    assert rows["ddp"]["replica_spread"] == 0.0


@pytest.mark.distributed
def test_known_broken_rows_differ(table):
    rows = {r["name"]: r for r in table["rows"]}
    assert rows["replica-desync"]["replica_spread"] > 0
    for name in ("replica-desync", "per-microbatch-mean", "loss-unscaled"):
        assert rows[name]["verdict"] == "differ" and rows[name]["as_expected"], rows[name]
    assert rows["loss-unscaled"]["grad_rel"] == pytest.approx(1.0, rel=1e-3)  # grads x accum(2)
    assert table["ok"] is True


@pytest.mark.distributed
def test_findings_rule_out_bucket_and_find_unused(table):
    by_id = {f["id"]: f for f in table["findings"]}
    assert by_id["ddp-bucket-config"]["status"] == "ruled-out"
    assert by_id["find-unused-true"]["status"] == "ruled-out"
    assert all(f["source"] == "experiment" for f in table["findings"])
    assert "compile-numerics" not in by_id  # the compile row is opt-in


def test_compile_is_judged_against_eager_noise():
    import torch

    rows = [v for v in variants(VerifyConfig(compile=True)) if v.name in ("ddp", "eager-repeat", "compile")]
    same = {"grads": {"w": torch.ones(3)}, "params": {"w": torch.ones(3)}, "replica_spread": 0.0}
    noisy = {
        "grads": {"w": torch.tensor([1.0, 1.0, 1.5])},
        "params": {"w": torch.ones(3)},
        "replica_spread": 0.0,
    }
    table = {
        r.name: r
        for r in compare(rows, {"single": same, "ddp": same, "eager-repeat": same, "compile": noisy})
    }
    assert table["compile"].verdict == "differ" and table["compile"].tolerance == FP32_REL_TOL
    table = {
        r.name: r
        for r in compare(rows, {"single": same, "ddp": same, "eager-repeat": noisy, "compile": noisy})
    }
    assert table["compile"].verdict == "equal"  # within 10x the run-to-run noise


def test_max_diff_is_relative_to_the_largest_reference_value():
    import torch

    assert max_diff({"a": torch.tensor([1.0, 2.001])}, {"a": torch.tensor([1.0, 2.0])}) == pytest.approx(
        (1e-3, 5e-4), rel=1e-3
    )
    assert max_diff({"a": torch.ones(1)}, {"b": torch.ones(1)})[0] == float("inf")


def test_only_keeps_the_rows_a_row_is_compared_with():
    names = [v.name for v in variants(VerifyConfig(compile=True, only=("compile",)))]
    assert names == ["ddp", "eager-repeat", "compile"]


def test_verify_cli_rejects_unknown_rows():
    result = CliRunner().invoke(app, ["verify", "--only", "nope"])
    assert result.exit_code == 2


@pytest.mark.slow
def test_compile_row_rules_out_compile_numerics_on_the_clean_trainer():
    result = CliRunner().invoke(app, ["verify", "--compile", "--only", "compile", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {r["name"] for r in data["rows"]} == {"ddp", "eager-repeat", "compile"}
    [finding] = [f for f in data["findings"] if f["id"] == "compile-numerics"]
    assert finding["status"] == "ruled-out"
