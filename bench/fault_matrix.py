"""The end-to-end fault matrix table: `python bench/fault_matrix.py [--faults a,b] [--dir DIR]` (docs/report.md).

The cases and the runner are tests/e2e/fault_matrix.py, which tests/e2e/test_fault_matrix.py runs a
subset of; tests never import bench/.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.fault_matrix import main  # noqa: E402  (the repository root, not bench/, holds `tests`)

if __name__ == "__main__":
    main()
