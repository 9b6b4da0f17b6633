"""`ddp-doctor plan` rejects impossible inputs with a clear message and exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app

BASE = {
    "vocab_size": 256,
    "hidden_size": 128,
    "intermediate_size": 352,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
}


def _plan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["plan", "--gpus", "1", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize("value", ["inf", "1e308", "1e7"])
def test_gpu_memory_that_is_infinite_or_absurd_is_a_usage_error(value: str) -> None:
    code, out = _plan("--model", "tiny", "--gpu-mem", value)
    assert code == 2 and "--gpu-mem must be a finite number" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_attention_heads": 0}, "num_attention_heads must be an integer from 1"),
        ({"hidden_size": 1e300}, "hidden_size must be an integer from 1"),
        ({"vocab_size": 10**40}, "vocab_size must be an integer from 1"),
        ({"intermediate_size": "4096"}, "intermediate_size must be an integer from 1"),
        ({"num_hidden_layers": True}, "num_hidden_layers must be an integer from 1"),
        ({"num_attention_heads": 256}, "num_attention_heads (256) exceeds hidden_size (128)"),
        ({"num_key_value_heads": 8}, "num_key_value_heads (8) exceeds num_attention_heads (4)"),
        ({"rms_norm_eps": "x"}, "rms_norm_eps must be a number"),
    ],
)
def test_model_config_with_impossible_dimensions_is_a_usage_error(
    tmp_path: Path, change: dict, message: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BASE, **change}))
    code, out = _plan("--model", str(path), "--gpu", "a100-80gb")
    assert code == 2 and message in out


def test_model_config_nested_thousands_deep_or_not_an_object_is_a_usage_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"vocab_size": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, out = _plan("--model", str(deep), "--gpu", "a100-80gb")
    assert code == 2 and "nested too deeply" in out
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    code, out = _plan("--model", str(listed), "--gpu", "a100-80gb")
    assert code == 2 and "a JSON object expected" in out


def test_float_dimensions_that_are_whole_numbers_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BASE, "hidden_size": 128.0}))
    code, out = _plan("--model", str(path), "--gpu", "a100-80gb", "--format", "json")
    assert code == 0 and json.loads(out)["strategies"]


def test_output_into_a_missing_folder_or_onto_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    code, out = _plan("--model", "tiny", "--gpu", "a100-80gb", "--output", str(tmp_path / "no" / "plan.txt"))
    assert code == 2 and "does not exist" in out
    code, out = _plan("--model", "tiny", "--gpu", "a100-80gb", "--output", str(tmp_path))
    assert code == 2 and "is a directory" in out


def test_output_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    link = tmp_path / "plan.txt"
    link.symlink_to(target)
    code, _ = _plan("--model", "tiny", "--gpu", "a100-80gb", "--output", str(link))
    assert code == 0
    assert target.read_text() == "keep me"
    assert not link.is_symlink() and "tiny" in link.read_text()


@pytest.mark.parametrize(
    ("flag", "value"), [("--node-network-gbps", "inf"), ("--node-network-gbps", "nan"), ("--mfu", "nan")]
)
def test_rates_that_are_not_finite_are_a_usage_error(flag: str, value: str) -> None:
    # --node-network-gbps has no upper bound: inf passed click's range and the JSON plan held bare
    # Infinity; nan is refused by click's range itself
    code, out = _plan("--model", "tiny", "--nodes", "2", flag, value)
    assert code == 2 and "Traceback" not in out
    if value == "inf":
        assert f"{flag} must be a finite number" in out


def test_model_path_that_cannot_be_looked_at_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    """Found by tests/hostile/ (run as nobody): Path.is_dir raised PermissionError (Python
    3.11) for a config.json under a folder we may not enter. Root enters any folder: simulate EACCES."""
    target = tmp_path / "locked" / "config.json"
    real = Path.is_dir

    def is_dir(self: Path) -> bool:
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    code, out = _plan("--model", str(target))
    assert code == 2 and "cannot access (Permission denied)" in out
