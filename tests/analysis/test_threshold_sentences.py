"""A check's evidence ``threshold`` is its catalog sentence (catalog.threshold_sentence), never a copy.

Issue 23: the sentences the checks wrote by hand drifted from the spec's rule (replica-divergence
said "checksums" where the catalog says "int32 checksums", fsdp-clip-wrong's spec still said
"inconclusive at run time"). Statically: every ``threshold=`` keyword in analysis/checks/ is a
``threshold_sentence(...)`` call, optionally followed by ``+ Text(...)`` for the run's own numbers.
On runs: the sentence starts with the catalog's rule in both languages.
"""

from __future__ import annotations

import ast
from pathlib import Path

from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis import checks
from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.core.catalog import LANGS, Text, threshold_text

CHECKS = Path(checks.__file__).parent


def _is_sentence(node: ast.expr) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_sentence(node.left)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "threshold_sentence"
    )


def test_every_threshold_keyword_of_a_check_is_the_catalog_sentence() -> None:
    hand_written = []
    for path in sorted(CHECKS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "threshold" and not _is_sentence(node.value):
                hand_written.append(f"{path.name}:{node.value.lineno}")
    assert not hand_written, hand_written


def test_the_evidence_threshold_of_a_run_starts_with_the_catalog_rule(tmp_path: Path) -> None:
    seen = 0
    for fault in ("", "loss-spike", "loss-unscaled", "warmup-short"):
        spec = SynthSpec(world_size=2, steps=120, faults=(fault,) if fault else ())
        for f in diagnose(write_run(tmp_path / (fault or "clean"), spec)).findings:
            thr = f.evidence.get("threshold")
            if thr is None:
                continue
            assert isinstance(thr, Text), f.id
            for lang in LANGS:
                assert thr.get(lang).startswith(threshold_text(f.id, lang)), (f.id, lang)
            seen += 1
    assert seen >= 10
