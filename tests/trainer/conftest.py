"""Trainer tests share 2 cores with other test processes: one intra-op thread each."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    torch.set_num_threads(1)
