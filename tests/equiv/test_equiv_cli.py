"""`ddp-doctor equiv` and `compare` on the stored example runs (docs/equivalence-example/): no ranks started."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.core.catalog import FINDINGS
from ddp_doctor.equiv import verdict

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "equivalence-example"
runner = CliRunner()


def test_equiv_json_names_the_first_stage_the_ratio_and_the_cause_with_exit_1():
    result = runner.invoke(app, ["equiv", "--format", "json", str(EXAMPLE / "one"), str(EXAMPLE / "many")])
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert out["verdict"] == "break" and out["exit_code"] == 1
    first = out["first_break"]
    assert (first["step"], first["stage"]) == (0, "local") and abs(first["ratio"] - 2) < 1e-3
    assert "accum-loss-unscaled" in first["causes"]
    assert out["data"][0]["status"] == "same" and "formula" in out["tolerances"]["0"]


def test_equiv_text_in_chinese():
    result = runner.invoke(app, ["equiv", "--lang", "zh", str(EXAMPLE / "one"), str(EXAMPLE / "many")])
    assert result.exit_code == 1 and "不等价" in result.stdout and "accum-loss-unscaled" in result.stdout


def test_a_run_compared_with_itself_is_equivalent():
    result = runner.invoke(app, ["equiv", str(EXAMPLE / "many"), str(EXAMPLE / "many")])
    assert result.exit_code == 0 and "EQUIVALENT" in result.stdout


def test_bad_input_exits_2_without_a_traceback(tmp_path):
    result = runner.invoke(app, ["equiv", str(tmp_path / "missing"), str(EXAMPLE / "many")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["equiv", str(empty), str(EXAMPLE / "many")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert runner.invoke(app, ["equiv"]).exit_code == 2


def test_compare_adds_the_equivalence_section_when_both_runs_carry_fingerprints():
    result = runner.invoke(app, ["compare", "--format", "json", str(EXAMPLE / "one"), str(EXAMPLE / "many")])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["equivalence"]["verdict"] == "break"
    text = runner.invoke(app, ["compare", str(EXAMPLE / "one"), str(EXAMPLE / "many")]).stdout
    assert "BREAK at step 0, stage local" in text


def test_every_cause_equiv_can_name_is_a_catalog_id_or_pending():
    source = inspect.getsource(verdict)
    named = set(re.findall(r'"([a-z0-9]+(?:-[a-z0-9]+)+)"', source)) - {"not-recorded", "not-judged"}
    causes = {n for n in named if n in FINDINGS or n in verdict.PENDING_IDS}
    assert causes >= {
        "accum-loss-unscaled",
        "ddp-bypassed",
        "no-sync-after-forward",
        "zero-grad-inside-accum",
    }
    unknown = named - causes
    assert not unknown, f"causes that are neither catalog IDs nor pending: {sorted(unknown)}"
