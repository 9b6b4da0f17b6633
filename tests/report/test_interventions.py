"""A run made with `ddp-doctor run --set K=V` says so in every report format (manifest `interventions`)."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.report.html import render_html
from ddp_doctor.report.text import render_text
from ddp_doctor.report.to_json import render_json

SETS = {"lr.scale": "0.1", "sampler.set_epoch": "auto"}


def _run(tmp_path: Path, sets: dict[str, str]) -> Path:
    run = write_run(tmp_path / "run", SynthSpec(steps=20))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["interventions"] = sets
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_interventions_in_text_html_and_json(tmp_path: Path) -> None:
    d = diagnose(_run(tmp_path, SETS))
    for lang, label in (("en", "Interventions (--set)"), ("zh", "干预（--set）")):
        text = render_text(d, lang)
        assert f"{label}: lr.scale=0.1, sampler.set_epoch=auto" in text
        assert f"{label}: lr.scale=0.1, sampler.set_epoch=auto" in render_html(d, lang)
    assert json.loads(render_json(d))["run"]["interventions"] == SETS


def test_no_interventions_line_for_a_plain_run(tmp_path: Path) -> None:
    d = diagnose(_run(tmp_path, {}))
    assert "Interventions" not in render_text(d) and "Interventions" not in render_html(d)
