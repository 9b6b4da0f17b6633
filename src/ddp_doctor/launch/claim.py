"""Claim a run directory for one `ddp-doctor run` at a time (two runs into one would interleave records).

Two launchers started together into one --out would interleave their records into the same rank
files. The launcher therefore creates RUN/.ddp-doctor.claim with O_CREAT|O_EXCL (atomic on local
and NFSv3+ file systems) before it writes anything, holds it while the command runs and removes it
at the end; a second launcher finds it and stops (exit 2). The file names the holder (host, pid,
start), so a claim left by a launcher that was SIGKILLed on this host is recognised as stale (its
pid is gone) and taken over.

Multi-node runs that share one --out will claim per node: ``claim(run_dir, node=N)`` uses
``.ddp-doctor.claim.node-N`` — the same mechanism, one file per node agent, so node agents never
contend with each other but two runs on one node still do.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path

from ddp_doctor.rundir.records import CLAIM


class RunDirBusy(Exception):
    """Another `ddp-doctor run` holds this run directory (or it already holds a finished run)."""


def claim_path(run_dir: Path, node: int | str | None = None) -> Path:
    """`node`: a node rank, or an instance name from probe/launch_env.py (`node-1`, `task-3`)."""
    if node is None:
        return Path(run_dir) / CLAIM
    return Path(run_dir) / (f"{CLAIM}.node-{node}" if isinstance(node, int) else f"{CLAIM}.{node}")


def _stale(path: Path) -> bool:
    """True when the claim was written on this host by a process that no longer exists."""
    try:
        holder = json.loads(path.read_text())
        if holder.get("host") != socket.gethostname():
            return False
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return False


def claim(run_dir: Path, node: int | str | None = None) -> Path:
    """Create the claim file of ``run_dir`` (creating the directory); raise RunDirBusy if held."""
    Path(run_dir).mkdir(mode=0o700, parents=True, exist_ok=True)  # owner-only (launcher.make_run_dir)
    path = claim_path(run_dir, node)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for attempt in range(2):
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            if attempt == 0 and _stale(path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                continue
            holder = ""
            with contextlib.suppress(OSError, ValueError):
                info = json.loads(path.read_text())
                holder = f" (held by pid {info.get('pid')} on {info.get('host')} since {info.get('start')})"
            raise RunDirBusy(
                f"{run_dir} is in use by another `ddp-doctor run`{holder}; choose another --out "
                f"(or, if no run is active, remove {path})"
            ) from None
        with os.fdopen(fd, "w") as fh:
            json.dump(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "start": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
                fh,
            )
        return path
    raise RunDirBusy(f"{run_dir}: could not claim {path}")


def release(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
