"""The JSON outputs and the CLI contain every field and option of the public contract
(tests/data/public_contract.json): adding is fine, renaming or dropping is not."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.cli_common import ExitCode
from ddp_doctor.core.findings import LINT_SCHEMA, REPORT_SCHEMA

CONTRACT = json.loads((Path(__file__).parent / "data" / "public_contract.json").read_text(encoding="utf-8"))
runner = CliRunner()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_report_json_contains_every_public_field(make_run: Callable[..., Path], lang: str) -> None:
    res = runner.invoke(
        app, ["report", str(make_run(faults=("sched-per-micro",))), "--format", "json", "--lang", lang]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    spec = CONTRACT["report_json"]
    assert data["schema"] == CONTRACT["schemas"]["report"] == REPORT_SCHEMA
    assert set(spec["top"]) <= set(data)
    assert set(spec["run"]) <= set(data["run"])
    assert data["findings"] and data["hypotheses"]
    for f in data["findings"]:
        assert set(spec["finding"]) <= set(f), f
        assert f["status"] in spec["statuses"] + ["observed"] and f["severity"] in spec["severities"]
    for h in data["hypotheses"]:
        assert set(spec["hypothesis"]) <= set(h), h
        assert h["verdict"] in spec["statuses"]
    assert set(CONTRACT["hypotheses"]) <= {h["id"] for h in data["hypotheses"]}


def test_lint_json_contains_every_public_field(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torch.nn.Linear(2, 2), find_unused_parameters=True)\n",
        encoding="utf-8",
    )
    res = runner.invoke(app, ["lint", str(script), "--format", "json"])
    data = json.loads(res.output)
    assert data["schema"] == CONTRACT["schemas"]["lint"] == LINT_SCHEMA
    assert set(CONTRACT["lint_json"]["top"]) <= set(data)
    assert data["findings"]
    for f in data["findings"]:
        assert set(CONTRACT["lint_json"]["finding"]) <= set(f), f


def test_exit_codes_are_the_public_ones() -> None:
    codes = CONTRACT["exit_codes"]
    assert (codes["ok"], codes["findings"], codes["usage"]) == (
        ExitCode.OK,
        ExitCode.FINDINGS,
        ExitCode.USAGE,
    )


@pytest.mark.parametrize("command", sorted(CONTRACT["cli"]))
def test_every_public_command_and_option_exists(command: str) -> None:
    res = runner.invoke(app, [command, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    for option in CONTRACT["cli"][command]:
        assert option in res.output, (command, option)
    for flag, values in CONTRACT["cli_values"].items():
        if flag.split()[0] == command:
            for value in values:
                assert value in res.output, (flag, value)
