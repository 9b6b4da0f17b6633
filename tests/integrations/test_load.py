"""The Python API: ddp_doctor.load() and the notebook view; `import ddp_doctor` stays light."""

from __future__ import annotations

import html
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import ddp_doctor


def test_load_returns_the_diagnosis_with_its_renderers(make_run: Callable[..., Path]) -> None:
    report = ddp_doctor.load(make_run(steps=80, faults=("sampler-missing",)))
    assert report.finding("sampler-missing").status == "confirmed"
    assert [f.id for f in report.confirmed("error")] == ["sampler-missing"]
    assert report.to_dict()["schema"] == "ddp-doctor.report/1"
    assert "sampler-missing" in repr(report)
    page = report._repr_html_()
    assert page.startswith("<iframe srcdoc=")
    # the HTML renderer's page, escaped into the attribute (no raw markup leaks into the notebook)
    inner = html.unescape(page.split('srcdoc="', 1)[1].split('" style=', 1)[0])
    assert inner == report.html()
    assert "<script>" not in page


def test_import_ddp_doctor_and_load_do_not_import_torch() -> None:
    code = (
        "import sys, ddp_doctor; ddp_doctor.load; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'heavy import'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
