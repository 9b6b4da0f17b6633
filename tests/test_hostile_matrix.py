"""The hostile-input matrix (bench/hostile_matrix.py, issue 10): an outside tester's damaged, hostile
and concurrent inputs for every area, each run through the real command line as a subprocess with a
timeout and a memory limit. CI runs `--quick` (one representative per class); the full matrix, whose
table is in docs/reliability.md, is slow. Both must end with 0 failures.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_bench():
    """bench/hostile_matrix.py by path: bench/ is not a package."""
    spec = importlib.util.spec_from_file_location(
        "bench_hostile_matrix", ROOT / "bench" / "hostile_matrix.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


hm = _load_bench()


def _matrix(tmp_path: Path, quick: bool) -> None:
    cfg = hm.Config(
        quick=quick, work=tmp_path / "matrix", timeout=60.0, rss_mb=1500.0, as_mb=6144.0, jobs=2, seed=10
    )
    results = hm.run_matrix(cfg, hm.AREAS, tmp_path / "tries.jsonl")
    print(hm.table(results))
    assert {r["area"] for r in results} == set(hm.AREAS)
    failed = [f"[{r['area']}] {r['name']}: {'; '.join(r['failures'])}" for r in results if r["failures"]]
    assert not failed, f"{len(failed)} of {len(results)} tries failed:\n" + "\n".join(failed)


def test_quick_hostile_matrix_has_no_failure(tmp_path: Path) -> None:
    _matrix(tmp_path, quick=True)


@pytest.mark.slow
def test_full_hostile_matrix_has_no_failure(tmp_path: Path) -> None:
    _matrix(tmp_path, quick=False)
