"""Golden findings: every runtime finding's text as the text report renders it, in English and Chinese,
exactly as committed in golden/findings.json.

Two parts:

* ``catalog/<id>``: for every runtime finding of the catalog, its title, meaning, fix and threshold
  sentence (``catalog.threshold_text``) in both languages;
* ``runs/<fault>``: the findings of a synthetic run with that fault (tests/fixtures/synth_run.py, world
  size 2, 120 steps, fixed seed) that are neither ruled out nor unmeasured, as the text report prints
  them: status and severity labels, summary and fix through ``Finding.summary_in`` / ``fix_in``, and the
  evidence's threshold sentence; ``runs/clean`` holds every finding of a clean run (the ruled-out and
  not-measured texts, once).

A changed text, a lost translation or a changed number shows up here. After an intended change,
regenerate and review the diff (the one golden-file mechanism, tests/fixtures/golden.py):

    python -m pytest tests/report/test_golden_findings.py --update-golden   # or DDP_DOCTOR_UPDATE_GOLDEN=1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures.golden import check_golden
from fixtures.synth_run import FAULTS, SynthSpec, write_run

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.core.catalog import FINDINGS, LANGS, Lang, Text, runtime_ids, threshold_text
from ddp_doctor.core.findings import SEVERITY_ORDER, Finding
from ddp_doctor.report.i18n import w
from ddp_doctor.report.text import render_text

GOLDEN = Path(__file__).parent / "golden" / "findings.json"


def _catalog() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fid in runtime_ids():
        spec = FINDINGS[fid]
        out[f"catalog/{fid}"] = {
            lang: {
                "severity": w(spec.severity, lang),
                "title": spec.title.get(lang),
                "meaning": spec.meaning.get(lang),
                "fix": spec.fix.get(lang),
                "threshold": threshold_text(fid, lang),
            }
            for lang in LANGS
        }
    return out


QUIET = ("ruled-out", "not-measured")


def _threshold(f: Finding, lang: Lang) -> str:
    """The evidence's threshold sentence as the text report shows it (catalog.threshold_sentence)."""
    thr = f.evidence.get("threshold") or ""
    return thr.get(lang) if isinstance(thr, Text) else str(thr)


def _runs(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fault in ("clean", *FAULTS):
        faults = () if fault == "clean" else (fault,)
        diag = diagnose(write_run(root / fault, SynthSpec(world_size=2, steps=120, faults=faults)))
        shown = sorted(
            (f for f in diag.findings if fault == "clean" or f.status not in QUIET),
            key=lambda f: (f.status, SEVERITY_ORDER[f.severity], f.id),
        )
        out[f"runs/{fault}"] = [
            {
                "id": f.id,
                "status": f.status,
                **{
                    lang: {
                        "status": w(f.status, lang),
                        "severity": w(f.severity, lang),
                        "summary": f.summary_in(lang),
                        "fix": f.fix_in(lang),
                        "threshold": _threshold(f, lang),
                    }
                    for lang in LANGS
                },
            }
            for f in shown
        ]
    return out


def test_every_runtime_finding_text_matches_the_golden_file(tmp_path: Path, update_golden: bool) -> None:
    check_golden(GOLDEN, {**_catalog(), **_runs(tmp_path)}, update_golden)


def test_every_runtime_finding_has_golden_text_in_both_languages() -> None:
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for fid in runtime_ids():
        entry = want[f"catalog/{fid}"]
        for lang in LANGS:
            assert entry[lang]["title"] and entry[lang]["meaning"] and entry[lang]["fix"], (fid, lang)
        assert entry["en"]["meaning"] != entry["zh"]["meaning"], fid  # a translation, not a copy
    for key, findings in want.items():
        if key.startswith("runs/"):
            for f in findings:
                assert f["en"]["summary"] and f["zh"]["summary"] and f["zh"]["fix"], (key, f["id"])


def test_the_golden_run_texts_are_what_the_text_report_prints(tmp_path: Path) -> None:
    fault = "sampler-missing"
    diag = diagnose(write_run(tmp_path / fault, SynthSpec(world_size=2, steps=120, faults=(fault,))))
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))[f"runs/{fault}"]
    assert want, fault
    for lang in LANGS:
        text = " ".join(render_text(diag, lang=lang, width=10_000).split())
        for f in (f for f in want if f["status"] == "confirmed"):
            assert f"{f[lang]['severity']} {f['id']}: {' '.join(f[lang]['summary'].split())}" in text, lang
            assert " ".join(f[lang]["fix"].split()) in text, lang
