"""TensorBoard event files, read with tensorboard's own ``EventAccumulator`` (never by hand).

A log dir may hold several runs (HF writes ``output_dir/runs/<date>_<host>/``); each directory with
event files is one run. The one with the most points of a loss-like scalar is imported and the
others are named in the problems. Steps are taken as logged (0-based optimizer steps), except
for HF's TensorBoardCallback (tags ``train/loss`` and ``train/epoch``), whose ``global_step`` counts
from 1. Scalars written by ``SummaryWriter.add_scalar`` (``simple_value``)
and TF2-style scalar tensors are both read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ddp_doctor.rundir.sources.base import LogImportError, Source
from ddp_doctor.rundir.sources.logs import log_run
from ddp_doctor.rundir.sources.series import ALIASES, ImportOptions, LogSeries, finite_or_nan

if TYPE_CHECKING:
    from ddp_doctor.rundir.reader import RunData

TB_PREFIX = "events.out.tfevents."
MAX_DIRS = 1000  # directories walked looking for event files (a log root, not a whole disk)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _not_regular(directory: Path) -> list[str]:
    """Event-file names in ``directory`` that are not regular files (a FIFO would block the reader)."""
    try:
        names = [n for n in os.listdir(directory) if n.startswith(TB_PREFIX)]
    except OSError:
        return []
    return [n for n in names if not _regular(os.path.join(directory, n))]


def event_dirs(root: Path, limit: int = 64) -> list[Path]:
    """Directories under ``root`` (itself included) that hold event files; symlinks not followed."""
    found: list[Path] = []
    for walked, (dirpath, dirnames, filenames) in enumerate(os.walk(root, followlinks=False), start=1):
        if any(f.startswith(TB_PREFIX) and _regular(os.path.join(dirpath, f)) for f in filenames):
            found.append(Path(dirpath))
            if len(found) >= limit:
                break
        if walked >= MAX_DIRS:
            break
        dirnames.sort()
    return found


def _load(path: Path) -> dict[str, list[tuple[int, float]]]:
    """All scalars of one event file or one run directory, by tag."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    odd = _not_regular(path) if path.is_dir() else []
    if odd:  # the accumulator opens every event file of a directory: a FIFO would hang it
        raise ValueError(f"event file(s) that are not regular files (FIFO, device?): {odd[:3]}")
    acc = ea.EventAccumulator(str(path), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    out: dict[str, list[tuple[int, float]]] = {}
    for tag in tags.get(ea.SCALARS, []):
        out[tag] = [(int(e.step), finite_or_nan(e.value)) for e in acc.Scalars(tag)]
    if tags.get(ea.TENSORS):
        from tensorboard.util import tensor_util

        for tag in tags[ea.TENSORS]:
            points = []
            for e in acc.Tensors(tag):
                arr = tensor_util.make_ndarray(e.tensor_proto)
                if arr.size == 1 and arr.dtype.kind in "fiu":
                    points.append((int(e.step), finite_or_nan(arr.reshape(()).item())))
            if points:
                out.setdefault(tag, points)
    return out


def _loss_points(scalars: dict[str, list[tuple[int, float]]]) -> int:
    return max((len(scalars.get(k, ())) for k in ALIASES["loss"]), default=0)


def read_tensorboard(path: Path) -> LogSeries:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise LogImportError(
            "reading TensorBoard logs needs the tensorboard package: pip install 'ddp-doctor[import]'"
        ) from None
    runs = [path] if path.is_file() else event_dirs(path)
    if not runs:
        raise LogImportError(f"{path}: no TensorBoard event files ({TB_PREFIX}*)")
    problems: list[str] = []
    best: tuple[Path, dict[str, list[tuple[int, float]]]] | None = None
    for run in runs:
        try:
            scalars = _load(run)
        except Exception as exc:  # a damaged file: the library's own error, reported, not raised
            problems.append(f"{run}: TensorBoard reader failed ({type(exc).__name__}: {exc})")
            continue
        if best is None or _loss_points(scalars) > _loss_points(best[1]):
            best = (run, scalars)
    if best is None:
        raise LogImportError(f"{path}: no readable TensorBoard event file; " + "; ".join(problems))
    others = [str(r) for r in runs if r != best[0]]
    if others:
        problems.append(
            f"{len(runs)} TensorBoard runs under {path}; imported {best[0]} (most loss points); "
            f"pass one of the others to import it: {', '.join(others[:5])}"
        )
    scalars = best[1]
    # HF's TensorBoardCallback ("train/" + the Trainer's log keys) steps by global_step, from 1
    hf = "train/loss" in scalars and "train/epoch" in scalars
    return LogSeries(
        source="tensorboard", path=str(best[0]), scalars=scalars, problems=problems, step_base=int(hf)
    )


def _detect(path: Path) -> bool:
    if path.is_dir():
        return bool(event_dirs(path, limit=1))
    return path.is_file() and path.name.startswith(TB_PREFIX)


def _read(path: Path, options: ImportOptions) -> RunData:
    return log_run(read_tensorboard(path), options, SOURCE.title)


SOURCE = Source(
    name="tensorboard",
    title="TensorBoard events",
    accepts="TensorBoard event files",
    detect=_detect,
    read=_read,
)
