"""Imports flow one way (docs/architecture.md, "Packages and floors"): no circle, no upward arrow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_graph_has_no_circle_and_no_upward_arrow() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "import_graph.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "module circles 0:" in proc.stdout
    assert "room circles 0:" in proc.stdout
    assert "upward room arrows 0" in proc.stdout
