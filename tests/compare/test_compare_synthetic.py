"""`compare` on synthetic runs whose noise and settings are known (tests/fixtures/synth_run.py)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from fixtures.synth_run import SynthSpec, write_run
from typer.testing import CliRunner

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.cli import app
from ddp_doctor.compare.analysis import PERSIST, compare, step_noise
from ddp_doctor.compare.render import render_html, render_json, render_text

SCHEMA = json.loads(
    (
        __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "schemas" / "compare-1.json"
    ).read_text()
)


def _run(tmp_path, name, **kw):
    return write_run(tmp_path / name, SynthSpec(steps=160, steps_per_epoch=40, **kw))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cmp")
    return {
        "w2": _run(base, "w2", world_size=2, accum=4),
        "w2_again": _run(base, "w2_again", world_size=2, accum=4),
        "w1_same_global": _run(base, "w1", world_size=1, accum=8, seed=1),
        "w8_4x": _run(base, "w8", world_size=8, accum=4, seed=2),
        "w8_sched": _run(base, "w8s", world_size=8, accum=4, seed=3, faults=("sched-per-micro",)),
    }


def test_identical_runs_are_equivalent_and_pass_assert_equal(runs):
    c = compare(diagnose(runs["w2"]), diagnose(runs["w2_again"]))
    assert c.conclusion == "equivalent"
    assert c.max_abs_diff == 0.0
    assert c.leaves_band_at is None
    assert c.assert_equal(1e-6, 0.0)[0]
    assert c.same_data_order is None or c.same_data_order


def test_same_global_batch_other_world_size_aligns_step_to_step(runs):
    c = compare(diagnose(runs["w1_same_global"]), diagnose(runs["w2"]))
    assert c.aligned.axis == "samples"
    assert c.aligned.fine_steps_per_point == 1
    assert c.a.batch_samples == c.b.batch_samples == 16
    # different noise draws (other seed): the curves differ by minibatch noise only
    assert c.leaves_band_at is None
    assert c.conclusion == "equivalent", c.causes
    assert not c.assert_equal(1e-6, 0.0)[0]  # not bit-equal: other seed


def test_four_times_the_batch_is_noisier_by_half_and_explained(runs):
    c = compare(diagnose(runs["w2"]), diagnose(runs["w8_4x"]))
    assert c.a.batch_samples == 16 and c.b.batch_samples == 64
    assert c.aligned.fine_steps_per_point == 4  # four A steps per B step
    assert c.noise_ratio_batch_only == pytest.approx(0.5)
    assert c.noise_ratio_predicted == pytest.approx(0.5, rel=0.2)
    assert c.noise_ratio_observed == pytest.approx(0.5, rel=0.35)
    assert c.noise_explained is True
    assert c.conclusion in ("explained", "equivalent")
    assert c.causes and c.causes[0].key == "batch-size"


def test_scheduler_per_micro_step_is_named_as_the_cause(runs):
    c = compare(diagnose(runs["w2"]), diagnose(runs["w8_sched"]))
    assert c.conclusion == "not-explained"
    keys = [x.key for x in c.causes]
    assert keys[0] == "finding:scheduler-per-microstep"
    assert "scheduler-steps" in keys
    assert "scheduler-per-microstep" in c.headline()
    assert any(d["id"] == "scheduler-per-microstep" and d["b"] == "confirmed" for d in c.differing_findings)


def test_step_noise_ignores_a_linear_trend():
    import numpy as np

    rng = np.random.default_rng(0)
    x = np.linspace(5, 1, 400) + rng.normal(0, 0.1, 400)
    sigma, n = step_noise(x)
    assert n == 398
    assert sigma == pytest.approx(0.1, rel=0.15)


def test_band_excursion_needs_persistent_points(tmp_path):
    import numpy as np

    from ddp_doctor.compare.analysis import Aligned, leaves_band

    x = np.arange(10.0)
    a = np.zeros(10)
    b = np.zeros(10)
    b[2] = 1.0  # one outlier: not an excursion
    b[6 : 6 + PERSIST] = 1.0
    sig = np.full(10, 0.1)
    al = Aligned(x, a, b, sig, sig, "a", 1.0)
    assert leaves_band(al) == 6.0


def test_outputs_text_json_html_and_zh(runs):
    c = compare(diagnose(runs["w2"]), diagnose(runs["w8_sched"]))
    data = json.loads(render_json(c))
    jsonschema.validate(data, SCHEMA)
    assert data["schema"] == "ddp-doctor.compare/1"
    assert data["conclusion"] == "not-explained"
    text = render_text(c)
    assert "Most likely causes" in text and "scheduler-per-microstep" in text
    assert "最可能的原因" in render_text(c, "zh")
    html = render_html(c)
    assert html.count("<svg") == 2 and "<script" not in html


def test_cli_assert_equal_exit_codes(runs, tmp_path):
    cli = CliRunner()
    ok = cli.invoke(app, ["compare", str(runs["w2"]), str(runs["w2_again"]), "--assert-equal"])
    assert ok.exit_code == 0, ok.output
    bad = cli.invoke(
        app, ["compare", str(runs["w2"]), str(runs["w8_sched"]), "--assert-equal", "--rtol", "1e-3"]
    )
    assert bad.exit_code == 1
    assert "FAILED" in bad.output
    out = tmp_path / "c.json"
    res = cli.invoke(app, ["compare", str(runs["w2"]), str(runs["w8_4x"]), "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)


def test_cli_input_errors_exit_2(runs, tmp_path):
    cli = CliRunner()
    assert cli.invoke(app, ["compare", str(tmp_path / "missing"), str(runs["w2"])]).exit_code == 2
    assert cli.invoke(app, ["compare", str(runs["w2"]), str(runs["w2"]), "--format", "pdf"]).exit_code == 2
    assert cli.invoke(app, ["compare", str(runs["w2"]), str(runs["w2"]), "--rtol", "nan"]).exit_code == 2
    assert cli.invoke(app, ["compare", str(runs["w2"]), str(runs["w2"]), "-o", str(tmp_path)]).exit_code == 2


def test_output_replaces_a_planted_symlink_not_its_target(runs, tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "cmp.txt"
    link.symlink_to(target)
    res = CliRunner().invoke(app, ["compare", str(runs["w2"]), str(runs["w2_again"]), "-o", str(link)])
    assert res.exit_code == 0, res.output
    assert target.read_text() == "keep me"
    assert not link.is_symlink() and "Conclusion" in link.read_text()


def test_an_imported_tensorboard_log_can_be_either_side(runs, tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path / "tb"))
    for t in range(60):
        writer.add_scalar("train/loss", 5.0 - 0.02 * t, t)
        writer.add_scalar("train/learning_rate", 3e-4, t)
    writer.close()
    res = CliRunner().invoke(
        app, ["compare", str(tmp_path / "tb"), str(runs["w2"]), "--format", "json", "--batch-a", "16"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    jsonschema.validate(data, SCHEMA)
    assert data["runs"]["a"]["settings"]["optimizer_steps"] == 60
    assert data["curves"]["axis"] == "samples"
