"""Which reader a path needs, and the one entry point that reads any supported log.

A run directory (``manifest.json`` or ``ranks/``) is not a log: callers read it with the run-dir
reader. Everything else is tried in this order: ``*.json`` file (HF trainer_state), TensorBoard
event file or a directory holding some, W&B offline run dir or ``.wandb`` file.
"""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.importers.series import LogSeries
from ddp_doctor.rundir.reader import RunDirError

TB_PREFIX = "events.out.tfevents."


class LogImportError(RunDirError):
    """The path is no log we can read (or its reader library is not installed); the message says which.

    A :class:`RunDirError`: callers that report "not a run" handle both the same way."""


def _has_events(path: Path) -> bool:
    from ddp_doctor.importers.tensorboard import event_dirs

    return bool(event_dirs(path, limit=1))


def detect(path: Path | str) -> str | None:
    """``"rundir"``, ``"trainer_state"``, ``"tensorboard"``, ``"wandb"`` or None (unknown)."""
    try:
        return _detect(Path(path))
    except OSError:  # Python 3.11: EACCES on a folder on the way raises from is_dir/is_file
        return None


def _detect(p: Path) -> str | None:
    if p.is_dir():
        if (p / "manifest.json").exists() or (p / "ranks").is_dir():
            return "rundir"
        if (p / "trainer_state.json").is_file():
            return "trainer_state"
        if (
            any(p.glob("*.wandb"))
            or any(p.glob("offline-run-*/*.wandb"))  # the `wandb/` dir itself: its latest run
            or (p.name.startswith(("offline-run-", "run-")) and (p / "files").is_dir())
        ):
            return "wandb"
        if _has_events(p):
            return "tensorboard"
        return None
    if not p.is_file():
        return None
    if p.name.startswith(TB_PREFIX):
        return "tensorboard"
    if p.suffix == ".wandb":
        return "wandb"
    if p.suffix == ".json":
        return "trainer_state"
    return None


def read_log(path: Path | str) -> LogSeries:
    """Read a supported log into a :class:`LogSeries`; raise :class:`LogImportError` otherwise."""
    p = Path(path)
    kind = detect(p)
    if kind == "trainer_state":
        from ddp_doctor.importers.trainer_state import read_trainer_state

        return read_trainer_state(p / "trainer_state.json" if p.is_dir() else p)
    if kind == "tensorboard":
        from ddp_doctor.importers.tensorboard import read_tensorboard

        return read_tensorboard(p)
    if kind == "wandb":
        from ddp_doctor.importers.wandb_offline import read_wandb_offline

        return read_wandb_offline(p)
    if kind == "rundir":
        raise LogImportError(f"{p}: a ddp-doctor run directory, not a log")
    raise LogImportError(
        f"{p}: not a run directory and no log ddp-doctor can import (a HF trainer_state.json, "
        "TensorBoard event files, or a W&B offline run dir wandb/offline-run-*); see docs/import.md"
    )
