"""Each intervention changes exactly what it claims, observed in a fresh process through torch's API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import teardown_race

from ddp_doctor.probe.interventions import (
    ENV_VAR,
    INTERVENTIONS,
    InterventionError,
    parse_sets,
    parse_value,
    to_env,
)

SCENARIO = Path(__file__).with_name("scenario_interventions.py")


def run_scenario(name: str, sets: dict[str, str], probe_dir: Path | None = None) -> dict:
    """Run a scenario in a fresh process; under `ddp-doctor run` (the probe) when probe_dir is given."""
    env = dict(os.environ, **{ENV_VAR: to_env(sets)})
    argv = [sys.executable, str(SCENARIO), name]
    if probe_dir is not None:
        argv = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(probe_dir), "--", *argv]

    def once() -> subprocess.CompletedProcess:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)

    # Some scenarios use a one-rank gloo group: tolerate its teardown abort (tests/teardown_race.py).
    if probe_dir is None:
        out = teardown_race.run_retrying(once, f"scenario {name}")
    else:
        out = once()
        if out.returncode != 0 and not teardown_race.tolerated(out, probe_dir, f"scenario {name}"):
            out.check_returncode()
    assert out.returncode == 0 or probe_dir is not None, out.stderr[-3000:]
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def test_parse_sets_keeps_values_as_written():
    assert parse_sets(["adam.eps=1e-10", " lr.scale = 0.1", "compile=off"]) == {
        "adam.eps": "1e-10",
        "lr.scale": "0.1",
        "compile": "off",
    }


@pytest.mark.parametrize(
    "item, message",
    [
        ("nokey", "expected KEY=VALUE"),
        ("adam.epsilon=1e-8", "unknown intervention key 'adam.epsilon'"),
        ("adam.eps=-1", "bad value for adam.eps"),
        ("adam.beta2=1.0", "strictly between 0 and 1"),
        ("compile=on", "must be one of off"),
        ("warmup=0.5", "bad value for warmup"),
        ("ddp.find_unused=maybe", "must be true or false"),
        ("clip=nan", "finite number > 0"),
    ],
)
def test_parse_sets_rejects_with_a_clear_message(item, message):
    with pytest.raises(InterventionError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_sets([item])


def test_parse_sets_rejects_a_key_given_twice():
    with pytest.raises(InterventionError, match="given twice"):
        parse_sets(["clip=1", "clip=2"])


def test_every_spec_example_parses():
    for spec in INTERVENTIONS.values():
        key, _, value = spec.example.partition("=")
        assert key == spec.key
        parse_value(key, value)


def test_compile_off_and_adam_overrides_show_in_param_groups():
    out = run_scenario("optimizers", {"compile": "off", "adam.eps": "1e-10", "adam.beta2": "0.95"})
    observed = out["observed"]
    assert out["result"]["errors"] == {}
    assert observed["adam_group"] == {"eps": 1e-10, "betas": [0.8, 0.95]}  # beta1 kept
    assert observed["adamw_group"] == {"eps": 1e-10, "betas": [0.9, 0.95]}
    assert observed["compile_identity"] and observed["decorator_identity"]
    assert out["effects"]["compile"] == 3


def test_without_interventions_nothing_is_patched():
    observed = run_scenario("optimizers", {})["observed"]
    assert observed["adam_group"] == {"eps": 1e-8, "betas": [0.8, 0.999]}
    assert not observed["compile_identity"]


def test_bad_keys_are_returned_as_errors_not_raised():
    out = run_scenario("optimizers", {"bogus": "1", "adam.eps": "-1"})
    assert set(out["result"]["errors"]) == {"bogus", "adam.eps"}
    assert out["observed"]["adam_group"]["eps"] == 1e-8


def test_lr_scale_warmup_and_clip_change_the_update_and_restore_the_lr():
    # grad norm 20 clipped to 1; lr 1.0 × scale 0.1 × warmup min(1, (k+1)/2)
    out = run_scenario("lr_and_clip", {"lr.scale": "0.1", "warmup": "2", "clip": "1.0"})
    assert out["observed"]["update_norms"] == pytest.approx([0.05, 0.1, 0.1, 0.1], rel=1e-5)
    assert out["observed"]["lr_after_step"] == [1.0] * 4  # the scheduler sees its own lr


@pytest.mark.distributed
def test_zero_wrapper_is_scaled_and_clipped_once_not_again_in_its_inner_optimizer():
    # lr 1 × 0.1, grad norm 20 clipped to 1: one application gives an update of norm 0.1
    out = run_scenario("zero", {"lr.scale": "0.1", "clip": "1.0"})
    assert out["observed"]["update_norm"] == pytest.approx(0.1, rel=1e-5)
    assert out["observed"]["lr_after"] == 1.0


@pytest.mark.distributed
def test_ddp_kwargs_are_overridden():
    out = run_scenario("ddp", {"ddp.bucket_cap_mb": "1", "ddp.find_unused": "false"})
    assert out["observed"] == {"bucket_bytes_cap": 1024 * 1024, "find_unused_parameters": False}


def test_sampler_set_epoch_auto_gives_new_orders_but_respects_explicit_set_epoch():
    assert not run_scenario("sampler", {})["observed"]["orders_distinct"]
    observed = run_scenario("sampler", {"sampler.set_epoch": "auto"})["observed"]
    assert observed == {"orders_distinct": True, "explicit_epoch_kept": True}


def test_seed_changes_a_script_that_seeds_itself_and_is_reproducible():
    draws = [run_scenario("seed", {"seed": s})["observed"]["draw"] for s in ("1", "2", "1")]
    assert draws[0] == draws[2]
    assert draws[0] != draws[1]


def test_applying_again_from_inside_the_torch_import_does_not_undo_the_seed(tmp_path):
    # Under the probe, apply_from_env runs at torch import, here nested inside the script's own
    # call (which imports torch): a second seed wrapper would XOR the seed away.
    direct = run_scenario("seed", {"seed": "1"})["observed"]["draw"]
    probed = run_scenario("seed", {"seed": "1"}, probe_dir=tmp_path / "run")["observed"]["draw"]
    assert probed == direct
