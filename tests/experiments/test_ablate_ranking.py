"""ablate's orchestration, resumability and ranking, on synthetic run directories (no training)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from synthetic import write_run

from ddp_doctor.experiments.ablate import ablate, is_finished, parse_variants, plan_runs, run_dir_name
from ddp_doctor.experiments.stability import stability_of_series
from ddp_doctor.experiments.stats import bootstrap_diff_ci, symmetric_change
from ddp_doctor.probe.interventions import InterventionError


class RecordingRunner:
    """Writes a synthetic run directory and remembers every call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []

    def __call__(self, command, run_dir: Path, sets: dict[str, str]) -> int:
        self.calls.append(sets)
        write_run(run_dir, sets)
        return 0


def test_lr_scale_removing_the_noise_and_spikes_ranks_first(tmp_path):
    runner = RecordingRunner()
    variants = parse_variants(["adam.eps=1e-10", "clip=1.0", "lr.scale=0.1"])
    result = ablate(["train.py"], tmp_path, variants, seeds=3, runner=runner)
    names = [v.name for v in result.variants]
    assert names[:3] == ["baseline", "lr.scale=0.1", "clip=1.0"]
    assert [v.verdict for v in result.variants[1:3]] == ["helped", "helped"]
    assert result.variants[3].verdict == "not applied"  # adam.eps took effect in no run
    assert result.variants[3].not_applied == ["adam.eps"]
    assert {c["seed"] for c in runner.calls} == {"0", "1", "2"}
    table = json.loads((tmp_path / "ablate.json").read_text())
    assert table["schema"] == "ddp-doctor.ablate/1"
    assert table["variants"][1]["name"] == "lr.scale=0.1"


def test_finished_runs_are_skipped_and_killed_ones_rerun(tmp_path):
    runner = RecordingRunner()
    variants = parse_variants(["lr.scale=0.1"])
    ablate(["train.py"], tmp_path, variants, seeds=2, runner=runner)
    assert len(runner.calls) == 4
    killed = plan_runs(tmp_path, variants, 2)[3][2]
    manifest = json.loads((killed / "manifest.json").read_text())
    manifest["end"] = None  # as the launcher leaves it while running or when killed
    (killed / "manifest.json").write_text(json.dumps(manifest))
    assert not is_finished(killed)
    ablate(["train.py"], tmp_path, variants, seeds=2, runner=runner)
    assert runner.calls[4:] == [{"lr.scale": "0.1", "seed": "1"}]


def test_resuming_with_another_command_is_refused(tmp_path):
    ablate(["train.py"], tmp_path, parse_variants(["clip=1"]), seeds=1, runner=RecordingRunner())
    with pytest.raises(ValueError, match="another command"):
        ablate(["other.py"], tmp_path, parse_variants(["clip=1"]), seeds=1, runner=RecordingRunner())


def test_failed_runs_are_counted_not_measured(tmp_path):
    def runner(command, run_dir, sets):
        write_run(run_dir, sets, exit_code=1 if "clip" in sets else 0)
        return 0

    result = ablate(["train.py"], tmp_path, parse_variants(["clip=1.0"]), seeds=2, runner=runner)
    clip = result.variants[1]
    assert (clip.runs, clip.failed, clip.verdict) == (0, 2, "no runs")


def test_variant_parsing():
    [combo] = parse_variants(["lr.scale=0.5,clip=1"])
    assert combo.sets == {"lr.scale": "0.5", "clip": "1"}
    assert run_dir_name(combo) == "lr.scale-0.5+clip-1"
    with pytest.raises(InterventionError, match="seed is set by ablate"):
        parse_variants(["seed=3"])
    with pytest.raises(InterventionError, match="given twice"):
        parse_variants(["clip=1", "clip=1"])


def test_bootstrap_ci_covers_a_clear_difference_and_excludes_zero():
    low, high = bootstrap_diff_ci([1.0, 1.1, 0.9, 1.05], [2.0, 2.1, 1.9, 2.05])
    assert low < -1.0 < high < 0


def test_symmetric_change_handles_zero_and_divergence():
    assert symmetric_change(0.0, 0.0) == 0.0
    assert symmetric_change(0.0, 3.0) == -2.0
    assert symmetric_change(1.0, math.inf) == -2.0
    assert symmetric_change(math.inf, 1.0) == 2.0
    assert symmetric_change(1.0, 3.0) == pytest.approx(-1.0)


def test_loss_std_ignores_the_trend_and_divergence_is_worst():
    t = np.arange(100, dtype=float)
    trend_only = stability_of_series(3 * np.exp(-t / 20), np.ones(100), np.ones(100))
    assert trend_only.loss_std < 0.01
    rng = np.random.default_rng(0)
    noisy = stability_of_series(1 + 0.1 * rng.standard_normal(100), np.ones(100), np.ones(100))
    assert noisy.loss_std == pytest.approx(0.1, rel=0.2)
    loss = np.ones(100)
    loss[50] = np.nan
    diverged = stability_of_series(loss, np.ones(100), np.ones(100))
    assert diverged.diverged and diverged.final_loss == math.inf


def test_cli_runs_each_variant_through_the_probe_and_flags_keys_that_never_applied(tmp_path):
    from typer.testing import CliRunner

    from ddp_doctor.cli import app

    script = Path(__file__).with_name("trivial_train.py")
    out = tmp_path / "ablate"
    result = CliRunner().invoke(
        app,
        [
            "ablate",
            "--seeds",
            "1",
            "--variant",
            "lr.scale=0.5",
            "--variant",
            "adam.eps=1e-10",
            "--out",
            str(out),
            "--format",
            "json",
            "--",
            sys.executable,
            str(script),
        ],
    )
    assert result.exit_code == 0, result.output
    table = json.loads(result.output[result.output.index("{") :])
    by_name = {v["name"]: v for v in table["variants"]}
    assert [v["failed"] for v in table["variants"]] == [0, 0, 0]
    assert by_name["adam.eps=1e-10"]["verdict"] == "not applied"  # the script uses SGD
    assert by_name["lr.scale=0.5"]["not_applied"] == []
    assert (out / "runs" / "lr.scale-0.5" / "seed-0" / "manifest.json").exists()


def test_cli_rejects_a_bad_variant_before_running_anything(tmp_path):
    from typer.testing import CliRunner

    from ddp_doctor.cli import app

    result = CliRunner().invoke(
        app, ["ablate", "--variant", "adam.epsilon=1", "--out", str(tmp_path / "a"), "--", "python", "x.py"]
    )
    assert result.exit_code == 2
    assert not (tmp_path / "a").exists()
