"""Metamorphic variants of each rule's canonical bug (tests/lint/variants/): the bug renamed, moved
into a class, a helper or another file, aliased, or logged another way is still found; the correct
idiom beside it is not. Each variant is also linted with its rule alone (its project index then holds
only the facts the rule declares)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddp_doctor.lint.engine import lint_paths
from tests.lint.project_facts import write_files
from tests.lint.variants import (
    accumulation,
    batchnorm,
    other_rules,
    rank0_classes,
    rank0_combined,
    rank0_echoes,
    rank0_grid,
    rank0_meter_windows,
    rank0_model_outputs,
    rank0_reach,
    rank0_structure,
    rank0_trackers,
    sampler,
    set_epoch,
    unreached,
)

MODULES = (
    rank0_grid,
    rank0_meter_windows,
    rank0_structure,
    rank0_reach,
    rank0_classes,
    rank0_combined,
    rank0_trackers,
    rank0_echoes,
    rank0_model_outputs,
    set_epoch,
    sampler,
    batchnorm,
    accumulation,
    other_rules,
    unreached,
)
CASES = {f"{m.__name__.rsplit('.', 1)[-1]}:{name}": case for m in MODULES for name, case in m.C.items()}

# Variants not found yet, each with why (strict: one that starts passing must be moved out of here).
KNOWN_MISSES = {
    "sampler:trainer_class": "a trainer class of a file that wraps nothing builds its own shuffled loader "
    "(left alone on purpose: such classes are often single-process)",
    "other_rules:fp16_dtype_getattr": 'getattr(torch, "float16") as an autocast dtype',
}


def _reported(root: Path, rule: str, report: str, select: tuple[str, ...] | None) -> bool:
    """A finding of ``rule`` in the file ``report`` (``path:line``: on that line)."""
    result = lint_paths([root], select=select)
    assert not result.diagnostics, [d.message for d in result.diagnostics]
    path, _, line = report.partition(":")
    return any(
        f.id == rule
        and Path(f.path or "").resolve() == (root / path).resolve()
        and (not line or f.line == int(line))
        for f in result.findings
    )


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_MISSES[n], strict=True))
        if n in KNOWN_MISSES
        else n
        for n in CASES
    ],
)
def test_variant(name: str, tmp_path: Path) -> None:
    rule, expected, files, report = CASES[name]
    root = write_files(tmp_path / "proj", files)
    assert _reported(root, rule, report, None) is expected
    assert _reported(root, rule, report, (rule,)) is expected
