"""The published JSON Schemas (docs/schemas/) validate real outputs: report (probe run and import) and lint."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
CORPUS = Path(__file__).resolve().parents[1] / "lint" / "corpus"

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (test extra)")


def _validator(name: str):
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _report_json(*args: str) -> dict:
    res = CliRunner().invoke(app, ["report", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_report_of_a_probe_run_matches_report_1(make_run: Callable[..., Path], lang: str) -> None:
    data = _report_json(str(make_run(steps=100, faults=("loss-spike", "sampler-missing"))), "--lang", lang)
    _validator("report-1.json").validate(data)


def test_report_of_an_imported_log_matches_report_1(tmp_path: Path) -> None:
    state = {
        "log_history": [{"loss": 3.0 - 0.01 * s, "learning_rate": 1e-3, "step": s} for s in range(1, 40)]
    }
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    data = _report_json(str(tmp_path / "trainer_state.json"))
    assert data["run"]["imported"]["source"] == "trainer_state"
    assert data["run"]["world_size"] is None  # not in the log and not given
    _validator("report-1.json").validate(data)


def test_lint_output_matches_lint_1() -> None:
    res = CliRunner().invoke(app, ["lint", str(CORPUS), "--format", "json"])
    data = json.loads(res.stdout)
    assert data["findings"], "the corpus has findings"
    _validator("lint-1.json").validate(data)


def test_every_catalog_id_fits_the_schemas_id_pattern() -> None:
    schema = json.loads((SCHEMAS / "report-1.json").read_text())
    check = jsonschema.Draft202012Validator(schema["$defs"]["id"])
    for i in [*FINDINGS, *HYPOTHESES]:
        check.validate(i)
