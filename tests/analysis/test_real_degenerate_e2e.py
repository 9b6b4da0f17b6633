"""Issue 22 on a real 2-rank gloo run of a script in the style of the pytorch/examples DDP tutorial
(tests/analysis/scripts/tutorial_single_class.py): a single-class cross_entropy (loss 0, every
gradient exactly 0), a `next(iter(loader))` peek before `set_epoch(epoch)`, and a val sampler with
shuffle=False. The report used to crash (ZeroDivisionError in gns.py), confirm set-epoch-missing
while listing epochs 0–4, and say nothing about a model that never trains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from probe.helpers import base_env, run_probe, torchrun

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.report.text import render_text
from ddp_doctor.report.to_json import render_json

SCRIPT = Path(__file__).resolve().parent / "scripts" / "tutorial_single_class.py"


def _torchrun(*args: str) -> list[str]:
    return torchrun(str(SCRIPT), *args)  # an absolute path: SCRIPTS / SCRIPT is SCRIPT


def _by_id(diag):
    return {f.id: f for f in diag.findings}


def test_tutorial_single_class_is_not_learning_and_its_peek_is_no_repeat(tmp_path):
    run_probe(tmp_path / "run", _torchrun(), env=base_env())
    diag = diagnose(tmp_path / "run")
    by_id = _by_id(diag)
    stalled = by_id["training-not-progressing"]
    assert stalled.status == "confirmed", stalled.summary
    assert "gradient norm is exactly 0 on 20 of 20 steps" in stalled.summary
    verdicts = {h.id: h.verdict for h in diag.hypotheses}
    assert verdicts["progress"] == "confirmed"
    epoch = by_id["set-epoch-missing"]
    assert epoch.status == "ruled-out", epoch.summary
    assert "0–4" in epoch.summary and epoch.evidence["judged"]["iterations_that_fed_no_step"] == 5
    assert epoch.evidence["other_samplers"][0]["shuffle"] is False  # the val sampler, judged apart
    assert diag.run_info["gradient_noise_scale"]["b_simple"] is None
    assert by_id["warmup-short"].status != "confirmed"  # SGD: Adam's warmup minimum does not apply
    text = render_text(diag, "en")
    assert "The model is not learning" in text
    report = json.loads(render_json(diag, "zh"))
    assert report["run"]["oscillation"]["not_progressing"] is True


@pytest.mark.slow
def test_the_same_script_learning_without_set_epoch_is_caught(tmp_path):
    """3 classes (it learns), set_epoch removed, a persistent DataLoader worker prefetching."""
    run_probe(
        tmp_path / "run",
        _torchrun("--no-set-epoch", "--classes", "3", "--workers", "1", "--persistent"),
        env=base_env(),
    )
    by_id = _by_id(diagnose(tmp_path / "run"))
    epoch = by_id["set-epoch-missing"]
    assert epoch.status == "confirmed" and "set_epoch is not called" in epoch.summary, epoch.summary
    assert by_id["training-not-progressing"].status == "ruled-out", by_id["training-not-progressing"].summary
