"""The hostile-input matrix (tests/hostile/, issue 10): an outside tester's damaged, hostile and
concurrent inputs for every area, each run through the real command line as a subprocess with a
timeout and a memory limit. CI runs `--quick` (one representative per class); the full matrix, whose
table is in docs/reliability.md, is slow. Both must end with 0 failures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import AREAS, Config
from .matrix import run_matrix, table


def _matrix(tmp_path: Path, quick: bool) -> None:
    cfg = Config(
        quick=quick, work=tmp_path / "matrix", timeout=60.0, rss_mb=1500.0, as_mb=6144.0, jobs=2, seed=10
    )
    results = run_matrix(cfg, AREAS, tmp_path / "tries.jsonl")
    print(table(results))
    assert {r["area"] for r in results} == set(AREAS)
    failed = [f"[{r['area']}] {r['name']}: {'; '.join(r['failures'])}" for r in results if r["failures"]]
    assert not failed, f"{len(failed)} of {len(results)} tries failed:\n" + "\n".join(failed)


def test_quick_hostile_matrix_has_no_failure(tmp_path: Path) -> None:
    _matrix(tmp_path, quick=True)


@pytest.mark.slow
def test_full_hostile_matrix_has_no_failure(tmp_path: Path) -> None:
    _matrix(tmp_path, quick=False)
