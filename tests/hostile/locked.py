"""Tries under a folder the user may not enter (stat itself fails with EACCES), for several areas."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .harness import Config, Try, _open_to_nobody
from .lint import DDP_SCRIPT

# --- paths under a folder the user may not enter (stat itself fails with EACCES) -------------------------


def locked_tries(base: Path, cfg: Config) -> list[Try]:
    """Run as an unprivileged user: every command given a path inside a 0700 folder of another user."""
    root = cfg.work / "locked"
    open_run = root / "open-run"
    shutil.copytree(base, open_run, symlinks=True)
    _open_to_nobody(open_run)
    locked = root / "locked"
    shutil.copytree(base, locked / "run", symlinks=True)
    (locked / "config.json").write_text(json.dumps({"hidden_size": 512, "num_hidden_layers": 2}))
    (locked / "train.py").write_text(DDP_SCRIPT)
    locked.chmod(0)  # not even its owner may enter (the harness may run as that owner)
    root.chmod(0o755)
    cases = {
        "reader": ["report", str(locked / "run"), "--format", "json"],
        "compare": ["compare", str(open_run), str(locked / "run")],
        "plan": ["plan", "--model", str(locked / "config.json"), "--gpus", "1"],
        "lint": ["lint", str(locked / "train.py")],
        "outputs": ["report", str(open_run), "--format", "json", "--output", str(locked / "out.json")],
    }
    return [
        Try(
            area,
            f"{argv[0]}: a path inside a folder we may not enter (as nobody)",
            argv,
            root,
            frozenset({2}),
            as_nobody=True,
        )  # fmt: skip
        for area, argv in cases.items()
    ]
