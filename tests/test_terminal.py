"""Names from the user's run never reach the terminal as raw control sequences."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.core.terminal import safe

runner = CliRunner()
ESC_TITLE = "\x1b]0;pwned\x07"


def test_control_characters_become_visible_escapes():
    assert safe(f"layer{ESC_TITLE}.weight") == "layer\\x1b]0;pwned\\x07.weight"
    assert safe("a\u202eb\x9bc\x7f") == "a\\u202eb\\x9bc\\x7f"
    assert safe("two\nlines\tok") == "two\nlines\tok"
    assert safe("two\nlines", oneline=True) == "two\\x0alines"
    assert safe("日本語 and ≥") == "日本語 and ≥"


def test_lint_output_escapes_a_hostile_path(tmp_path):
    script = tmp_path / f"bad{ESC_TITLE}.py"
    script.write_text(
        "import torch\nm = torch.nn.parallel.DistributedDataParallel(m, find_unused_parameters=True)\n"
    )
    res = runner.invoke(app, ["lint", str(script)])
    assert "\x1b" not in res.output and "\\x1b" in res.output


def test_cli_errors_escape_the_name_they_quote(tmp_path):
    res = runner.invoke(app, ["report", str(tmp_path / f"run{ESC_TITLE}")])
    assert res.exit_code == 2
    assert "\x1b" not in res.output


def test_text_report_escapes_names_from_the_run(make_run):
    run = make_run()
    hostile = run.parent / f"r{ESC_TITLE}"
    run.rename(hostile)
    res = runner.invoke(app, ["report", str(hostile)])
    assert res.exit_code == 0, res.output
    assert "\x1b]0;" not in res.output


# ESC ] title BEL, CSI clear-screen, a bare BEL: what a hostile name would carry.
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x07"


def _clean(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output, output


def _plant_unused_parameter(run) -> None:
    from ddp_doctor.rundir.records import rank_file

    for rank in (0, 1):
        path = rank_file(run, rank)
        lines = path.read_text().splitlines()
        record = json.dumps({"kind": "unused", "step": 1, "names": [f"layer{HOSTILE}.weight"]})
        path.write_text("\n".join([*lines[:-1], record, lines[-1]]) + "\n")


def test_text_report_escapes_a_parameter_name_and_the_command(make_run):
    run = make_run(faults=("unused",))
    _plant_unused_parameter(run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["command"] = ["python", f"train{HOSTILE}.py"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    for lang in ("en", "zh"):
        res = runner.invoke(app, ["report", str(run), "--lang", lang])
        assert res.exit_code == 0, res.output
        _clean(res.output)
        assert "\\x1b" in res.output  # the name is shown, made visible


def test_compare_text_escapes_run_names(make_run, tmp_path):
    a, b = make_run(), make_run()
    hostile = tmp_path / f"b{HOSTILE}"
    b.rename(hostile)
    res = runner.invoke(app, ["compare", str(a), str(hostile)])
    assert res.exit_code == 0, res.output
    _clean(res.output)
    assert "\\x1b" in res.output
    res = runner.invoke(app, ["compare", str(a), str(tmp_path / f"missing{HOSTILE}")])
    assert res.exit_code == 2
    _clean(res.output)


def test_plan_escapes_a_hostile_config_path(tmp_path):
    config = tmp_path / f"model{HOSTILE}.json"
    config.write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}))
    for model in (str(config), str(tmp_path / f"missing{HOSTILE}.json")):
        res = runner.invoke(app, ["plan", "--model", model, "--gpus", "1", "--gpu", "a100-80gb"])
        _clean(res.output)


def test_lint_error_for_a_missing_hostile_path(tmp_path):
    res = runner.invoke(app, ["lint", str(tmp_path / f"gone{HOSTILE}.py")])
    assert res.exit_code == 2
    _clean(res.output)
    assert "\\x1b" in res.output


def test_run_refusal_escapes_the_run_directory(tmp_path):
    out = tmp_path / f"runs{HOSTILE}"
    out.mkdir()
    (out / "manifest.json").write_text("{}")
    res = runner.invoke(app, ["run", "--out", str(out), "--", "python", "-c", "pass"])
    assert res.exit_code == 2, res.output
    _clean(res.output)
    assert "\\x1b" in res.output


def test_trainer_outcome_escapes_the_scripts_own_log(tmp_path):
    from rich.console import Console

    from ddp_doctor.trainer.launch import LOG_FILE, print_outcome

    (tmp_path / LOG_FILE).write_text(f"Traceback: bad name {HOSTILE}\n")
    buf = io.StringIO()
    print_outcome(Console(file=buf, width=200), str(tmp_path), 1, None)
    print_outcome(Console(file=buf, width=200), str(tmp_path), 1, f"teardown note {HOSTILE}")
    _clean(buf.getvalue())
    assert "\\x1b" in buf.getvalue()


def test_verify_and_ablate_tables_escape_names_from_the_run():
    from rich.console import Console

    from ddp_doctor.experiments.render import ablate_table, verify_table

    buf = io.StringIO()
    console = Console(file=buf, width=300)
    row = SimpleNamespace(
        label=f"row{HOSTILE}", as_expected=True, verdict="equal", expect="equal", grad_max_abs=0.0,
        grad_rel=0.0, param_max_abs=0.0, param_rel=0.0, replica_spread=0.0, tolerance=1e-6,
    )  # fmt: skip
    finding = SimpleNamespace(id="replica-divergence", status="ruled-out", summary=f"rank name {HOSTILE}")
    config = SimpleNamespace(world=2, accum=2, preset="tiny", steps=1)
    verify_table(SimpleNamespace(config=config, rows=[row], findings=[finding], ok=True), console)
    variant = SimpleNamespace(
        name=f"lr=1e-3{HOSTILE}", diffs={}, metrics={}, failed=0, diverged=0, verdict="baseline", score=0.0
    )
    with_metrics = SimpleNamespace(**{**vars(variant), "metrics": dict.fromkeys(_metrics(), [1.0])})
    ablate_table(SimpleNamespace(seeds=1, variants=[with_metrics]), console)
    _clean(buf.getvalue())
    assert buf.getvalue().count("\\x1b") >= 3


def _metrics():
    from ddp_doctor.experiments.stability import METRICS

    return METRICS


def test_json_outputs_escape_c1_controls_and_bidi_overrides(make_run, tmp_path):
    """Found by tests/hostile/: json.dumps(ensure_ascii=False) escapes C0 but left U+009B (an
    8-bit CSI), DEL and bidi overrides raw in report/compare/lint JSON and SARIF on the terminal."""
    from ddp_doctor.core.terminal import safe_json
    from ddp_doctor.rundir.records import rank_file

    text = json.dumps({"k": "a\x9b2J\u202eb\x7f\x1b"}, ensure_ascii=False)
    assert safe_json(text) == '{"k": "a\\u009b2J\\u202eb\\u007f\\u001b"}'
    assert json.loads(safe_json(text)) == json.loads(text)
    c1 = "\x9b2J\u202e"
    run = make_run(faults=("unused",))
    for rank in (0, 1):
        path = rank_file(run, rank)
        lines = path.read_text().splitlines()
        record = json.dumps({"kind": "unused", "step": 1, "names": [f"layer{c1}.weight"]}, ensure_ascii=False)
        path.write_text("\n".join([*lines[:-1], record, lines[-1]]) + "\n")
    script = tmp_path / f"bad{c1}.py"
    script.write_text(
        "import torch\nm = torch.nn.parallel.DistributedDataParallel(m, find_unused_parameters=True)\n"
    )
    for args in (
        ["report", str(run), "--format", "json"],
        ["compare", str(run), str(run), "--format", "json"],
        ["lint", str(script), "--format", "json"],
        ["lint", str(script), "--format", "sarif"],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code in (0, 1), res.output
        assert "\x9b" not in res.stdout and "\u202e" not in res.stdout, args
        json.loads(res.stdout)
