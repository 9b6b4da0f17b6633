"""After `ddp-doctor run`: did every rank report? A run whose ranks never wrote a file is not a
run that went well, and must not look like one ("(exit code 0)" and then `report` exiting 2).

A rank file is opened at the rank's first training event (probe/state.py `mark_training`), and
its header carries the world size. So: no rank file at all means the probe never started in a
training process; fewer rank files than the largest world size the headers state means some
ranks never reported. The note is printed by `run` and kept in the manifest (`unreported`,
docs/run-format.md). Reads at most the first line of each file; a damaged file only counts.
"""

from __future__ import annotations

import json
from pathlib import Path

from ddp_doctor.rundir.records import RANKS_DIR

HEADER_BYTES = 1 << 16  # a header line is < 1 KB; a longer first line is damage, not a header
MAX_FILES = 100_000


def _world_size(path: Path) -> int | None:
    try:
        with path.open("rb") as f:
            header = json.loads(f.readline(HEADER_BYTES))
    except (OSError, ValueError):
        return None
    world = header.get("world_size") if isinstance(header, dict) else None
    return world if isinstance(world, int) and not isinstance(world, bool) and world > 0 else None


def unreported_note(run_dir: Path) -> str | None:
    """A sentence saying which ranks never reported, or None when every rank did."""
    ranks = run_dir / RANKS_DIR
    try:
        files = sorted(p for p in ranks.glob("rank-*.jsonl") if p.is_file())[:MAX_FILES]
    except OSError:
        files = []
    if not files:
        return (
            "no rank reported: ranks/ holds no rank file, so the probe never started in a training "
            "process (the command trained nothing, ran no Python with torch, or its launcher dropped "
            "the environment: ssh/pdsh, mpirun without -x, python -I/-E/-S). Start it explicitly "
            "with `import ddp_doctor; ddp_doctor.attach()` at the top of the script (docs/probe.md)."
        )
    worlds = [w for w in (_world_size(p) for p in files) if w is not None]
    world = max(worlds, default=0)
    if len(files) >= world:
        return None
    return (
        f"only {len(files)} of {world} ranks reported (rank files in ranks/): the others never "
        "started the probe or never reached a training step; per-rank checks will use the ranks present."
    )
