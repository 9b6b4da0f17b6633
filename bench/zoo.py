"""Score ddp-doctor on the zoo: `python bench/zoo.py [--only a.py,b.py] [--dir DIR]` (docs/zoo.md).

The harness (headers, scoring, the table) is tests/zoo/harness.py, beside the scripts and the test
that runs a fast subset of them; tests never import bench/.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.zoo.harness import main  # noqa: E402  (the repository root, not bench/, holds `tests`)

if __name__ == "__main__":
    main()
