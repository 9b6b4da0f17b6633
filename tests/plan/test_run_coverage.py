"""`plan` and `run` agree (issue 14, item 5): every setup `plan` may recommend has a row saying what
`ddp-doctor run` measures on it, and the plan output (text and JSON) says what it cannot diagnose."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.core.catalog import FINDINGS
from ddp_doctor.plan.memory import STRATEGIES
from ddp_doctor.plan.run_coverage import COVERAGE, coverage

FORUM_ARGS = ["plan", "--model", "llama-13b", "--gpus", "4", "--gpu", "v100-32gb", "--global-batch", "64"]


def test_every_strategy_and_suggested_flag_has_a_row_and_missed_findings_are_catalog_ids() -> None:
    assert set(STRATEGIES) | {"--offload", "--checkpointing", "--lora-rank"} == set(COVERAGE)
    for row in COVERAGE.values():
        assert row.measured and row.diagnosable in ("yes", "partly", "no")
        assert (row.diagnosable == "yes") == (row.missed == "")  # anything not "yes" says what it misses
        for fid in re.findall(r"\(([a-z0-9]+(?:-[a-z0-9]+)+)\)", row.missed):
            assert fid in FINDINGS, fid
    assert [c.setup for c in coverage(["zero3", "ddp"], {"--offload"})] == ["zero3", "ddp", "--offload"]


def test_json_names_what_run_cannot_diagnose_for_each_planned_strategy() -> None:
    result = CliRunner().invoke(app, [*FORUM_ARGS, "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["setup"]: r for r in json.loads(result.output)["run_coverage"]}
    # nothing fits the forum case without them, so plan suggests --checkpointing/--offload/--lora-rank
    assert set(rows) == set(STRATEGIES) | {"--offload", "--checkpointing", "--lora-rank"}
    assert rows["ddp"]["diagnosable"] == "yes" and rows["fsdp"]["diagnosable"] == "yes"
    for zero in ("zero1", "zero2", "zero3"):
        assert rows[zero]["diagnosable"] == "partly"
        assert "batch-below-noise-scale" in rows[zero]["missed"]
    assert "replica checksums" in rows["zero3"]["missed"]


def test_text_says_it_for_the_chosen_strategy_only() -> None:
    text = (
        CliRunner().invoke(app, [*FORUM_ARGS, "--strategy", "zero2", "--checkpointing", "--offload"]).output
    )
    section = text.split("What `ddp-doctor run` can diagnose on these setups:")[1]
    assert "zero2 (DeepSpeed ZeRO stage 2): partly" in section
    assert "`run` cannot diagnose: per-rank (local) gradient norms" in " ".join(section.split())
    assert "\n  --checkpointing (" in section and "\n  --offload (" in section
    assert "\n  fsdp (" not in section and "\n  ddp (" not in section
