"""HF Trainer's ``trainer_state.json`` (``Trainer.save_state()`` / every checkpoint).

``log_history`` is a list of the dicts ``Trainer.log`` received: training rows (``loss``,
``grad_norm``, ``learning_rate``, ``epoch``, ``step``), evaluation rows (``eval_*``) and one final
summary row (``train_loss`` = the mean over the whole run, ``train_runtime`` …) that is not a
per-step value and is skipped. ``step`` is ``global_step``, which counts optimizer steps from 1.
A training row's ``loss`` is the mean over the ``logging_steps`` steps since the previous row,
gathered over ranks.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ddp_doctor.rundir.sources.base import LogImportError, Source
from ddp_doctor.rundir.sources.logs import log_run
from ddp_doctor.rundir.sources.series import ImportOptions, LogSeries, finite_or_nan
from ddp_doctor.rundir.sources.tensorboard import TB_PREFIX

if TYPE_CHECKING:
    from ddp_doctor.rundir.reader import RunData

MAX_BYTES = 512 * 2**20  # a trainer_state.json is kilobytes to a few MB; refuse what cannot be one
SUMMARY_KEYS = ("train_runtime", "total_flos", "train_samples_per_second")


def read_trainer_state(path: Path) -> LogSeries:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block or never end
            raise LogImportError(f"{path}: not a regular file")
        size = st.st_size
        if size > MAX_BYTES:
            raise LogImportError(f"{path}: {size} bytes is too large for a trainer_state.json")
        state = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested thousands deep
        raise LogImportError(f"{path}: not readable as JSON ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise LogImportError(f"{path}: no `log_history` list: not a HF trainer_state.json")
    out = LogSeries(source="trainer_state", path=str(path), scalars={}, step_base=1)
    bad = 0
    for row in state["log_history"]:
        if not isinstance(row, dict) or any(k in row for k in SUMMARY_KEYS):
            continue
        step = row.get("step")
        if not isinstance(step, int) or isinstance(step, bool):
            bad += 1
            continue
        for key, value in row.items():
            # numbers only (json.loads gives NaN/Infinity as floats); strings, lists, bools are not scalars
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                out.scalars.setdefault(key, []).append((step, finite_or_nan(value)))
    if bad:
        out.problems.append(f"{bad} log_history row(s) without an integer `step` skipped")
    for key in ("train_batch_size", "logging_steps", "max_steps"):
        if isinstance(state.get(key), int) and not isinstance(state.get(key), bool):
            out.facts[key] = state[key]
    return out


def _detect(path: Path) -> bool:
    if path.is_dir():
        return (path / "trainer_state.json").is_file()
    return path.is_file() and path.suffix == ".json" and not path.name.startswith(TB_PREFIX)


def _read(path: Path, options: ImportOptions) -> RunData:
    series = read_trainer_state(path / "trainer_state.json" if path.is_dir() else path)
    return log_run(series, options, SOURCE.title)


SOURCE = Source(
    name="trainer_state",
    title="HF trainer_state.json",
    accepts="a HF trainer_state.json",
    detect=_detect,
    read=_read,
)
