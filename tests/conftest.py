"""Shared fixtures: synthetic run directories in the exact run format (tests/fixtures/synth_run.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import teardown_race
from fixtures import golden
from fixtures.synth_run import SynthSpec, write_run

from ddp_doctor.analysis.diagnose import Diagnosis, diagnose


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        golden.OPTION,
        action="store_true",
        default=False,
        help="rewrite the golden files (tests/fixtures/golden.py) instead of failing on a difference",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when this session rewrites golden files (``--update-golden`` or DDP_DOCTOR_UPDATE_GOLDEN=1)."""
    return golden.updating(request.config)


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    counter = iter(range(1000))

    def make(**kw) -> Path:
        return write_run(tmp_path / f"run{next(counter)}", SynthSpec(**kw))

    return make


@pytest.fixture
def diag_of(make_run: Callable[..., Path]) -> Callable[..., Diagnosis]:
    def run(**kw) -> Diagnosis:
        return diagnose(make_run(**kw))

    return run


def pytest_collection_modifyitems(config, items) -> None:
    """`gpu` tests need a CUDA device: skipped (with the reason) where there is none."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs a CUDA device (marker gpu)")
        for item in gpu_items:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter) -> None:
    """Say how often the known torch/gloo teardown abort was tolerated or retried (tests/teardown_race.py)."""
    events = teardown_race.EVENTS
    terminalreporter.write_line(
        f"torch/gloo teardown aborts after a complete run: {len(events)} tolerated or retried"
        + (f" ({'; '.join(events)})" if events else "")
    )
