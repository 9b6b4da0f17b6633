"""The real-script corpus: `python bench/real_scripts.py --mirrors DIR --cache DIR --out DIR [--only ID ...]`
(docs/real-scripts.md).

The harness (rows, shim, local inputs, runner and scoring) is tests/realscripts/, whose CI subset
tests/realscripts/test_fixtures.py runs; tests never import bench/.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.realscripts.harness import main  # noqa: E402  (the repository root, not bench/, holds `tests`)

if __name__ == "__main__":
    raise SystemExit(main())
