"""Each check module declares the catalog IDs it returns (FINDS): diagnose skips a check by them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fixtures.synth_run import FAULTS

from ddp_doctor.analysis.context import build_context
from ddp_doctor.analysis.diagnose import CHECKS
from ddp_doctor.core.catalog import FINDINGS, lint_ids
from ddp_doctor.rundir.reader import read_run


def test_every_runtime_id_is_declared_by_a_check() -> None:
    declared = [fid for module in CHECKS for fid in module.FINDS]
    assert set(declared) <= set(FINDINGS)
    runtime = {fid for fid in FINDINGS if fid not in set(lint_ids())}
    assert runtime - set(declared) == set(), "a runtime finding no check declares"


def test_checks_return_only_what_they_declare(make_run: Callable[..., Path]) -> None:
    # one run per synthetic fault (each makes its check take its confirming branch) plus a clean one
    for faults in [(), *((f,) for f in FAULTS)]:
        ctx = build_context(read_run(make_run(faults=faults)))
        for module in CHECKS:
            got = {f.id for f in module.check(ctx)}
            assert got <= set(module.FINDS), (module.__name__, faults, got - set(module.FINDS))
