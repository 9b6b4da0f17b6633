"""`ddp-doctor plan` on the command line: formats, config.json input, errors, and no torch import."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.plan.render import PLAN_SCHEMA
from ddp_doctor.presets import PRESETS

FORUM_ARGS = ["plan", "--model", "llama-13b", "--gpus", "4", "--gpu", "v100-32gb", "--global-batch", "64"]


def test_json_output_lists_every_strategy_with_memory_components_and_hypotheses() -> None:
    result = CliRunner().invoke(app, [*FORUM_ARGS, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == PLAN_SCHEMA
    assert [s["strategy"] for s in data["strategies"]] == ["ddp", "zero1", "zero2", "zero3", "fsdp"]
    ddp = data["strategies"][0]
    assert ddp["fits"] is False and ddp["accumulation"] == 16
    assert {"weights", "grads", "optimizer", "activations", "comm_buffers", "total"} <= set(ddp["memory_gib"])
    assert data["setup"]["precision"] == "fp16"
    assert any(h["id"] == "precision" and "fp16-overflow" in h["findings"] for h in data["hypotheses"])
    assert data["alternatives"]


def test_text_and_table_formats_show_the_verdicts() -> None:
    text = CliRunner().invoke(app, FORUM_ARGS).output
    assert "optimizer states" in text and "[error]" in text and "fp16-overflow" in text
    table = (
        CliRunner()
        .invoke(
            app, [*FORUM_ARGS, "--format", "table", "--strategy", "zero3", "--offload", "--checkpointing"]
        )
        .output
    )
    assert "zero3" in table and "yes" in table and "ddp" not in table


def test_hf_config_json_gives_the_same_plan_as_the_preset(tmp_path) -> None:  # noqa: ANN001
    cfg = dict(PRESETS["llama-7b"].hf_config_kwargs(), model_type="llama")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    args = ["--gpus", "8", "--gpu", "a100-80gb", "--format", "json"]
    from_file = json.loads(CliRunner().invoke(app, ["plan", "--model", str(tmp_path), *args]).output)
    from_preset = json.loads(CliRunner().invoke(app, ["plan", "--model", "llama-7b", *args]).output)
    assert from_file["setup"]["model"]["parameters"] == PRESETS["llama-7b"].num_parameters()
    assert from_file["strategies"] == from_preset["strategies"]


def test_unknown_gpu_or_model_is_a_usage_error() -> None:
    assert (
        CliRunner().invoke(app, ["plan", "--model", "llama-13b", "--gpus", "4", "--gpu", "k80"]).exit_code
        == 2
    )
    assert CliRunner().invoke(app, ["plan", "--model", "nope", "--gpus", "4", "--gpu", "h200"]).exit_code == 2


def test_planning_does_not_import_torch_or_transformers() -> None:
    code = (
        "import sys; from ddp_doctor.plan import advice, render, planner; "
        "print('torch' in sys.modules or 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
