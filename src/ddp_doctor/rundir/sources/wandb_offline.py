"""W&B offline runs (``wandb/offline-run-*/run-*.wandb``), read with wandb's own reader.

The ``.wandb`` file is wandb's transaction log (LevelDB-style framed protobuf records). wandb ≥ 0.2x
dropped its Python ``DataStore``; the public reader is now ``wandb leet inspect --json FILE``
(the wandb-core binary shipped in the wheel), which prints one JSON object per record. We run it
with this interpreter (``python -m wandb``) and keep the ``history`` records: ``history.item`` is
the dict passed to ``wandb.log`` (nested keys flattened with dots, NaN as the string ``"NaN"``),
``history.step.num`` wandb's step. HF's WandbCallback adds ``train/global_step`` to every row: when
present it is the step (optimizer steps counted from 1), else wandb's step.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddp_doctor.rundir.sources.base import LogImportError, Source
from ddp_doctor.rundir.sources.logs import log_run
from ddp_doctor.rundir.sources.series import ImportOptions, LogSeries, finite_or_nan
from ddp_doctor.rundir.sources.tensorboard import TB_PREFIX

if TYPE_CHECKING:
    from ddp_doctor.rundir.reader import RunData

TIMEOUT_S = 600  # the reader streams; a log this slow to read is reported, not waited on forever
MAX_BAD_LINES = 5
GLOBAL_STEP_KEYS = ("train/global_step", "trainer/global_step", "global_step")


def wandb_file(path: Path, problems: list[str] | None = None) -> Path | None:
    """The .wandb file of a run dir; for the ``wandb/`` dir, the newest offline run's (named in problems)."""
    if path.is_file():
        return path
    files = sorted(path.glob("*.wandb"))
    if files:
        return files[-1]
    runs = sorted(path.glob("offline-run-*/*.wandb"))  # names start with the UTC start time
    if runs and problems is not None and len(runs) > 1:
        problems.append(f"{len(runs)} offline runs under {path}; imported the newest, {runs[-1].parent.name}")
    return runs[-1] if runs else None


def read_wandb_offline(path: Path) -> LogSeries:  # noqa: PLR0915 - one streaming loop over wandb's reader, with its timeout and clean-up
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise LogImportError(
            "reading W&B offline runs needs the wandb package: pip install 'ddp-doctor[import]'"
        ) from None
    notes: list[str] = []
    log = wandb_file(path, notes)
    if log is None:
        raise LogImportError(f"{path}: no .wandb file in this W&B run directory")
    cmd = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(log)]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise LogImportError(f"{log}: could not start wandb's reader ({exc})") from None
    timer = threading.Timer(TIMEOUT_S, proc.kill)
    timer.start()
    out = LogSeries(source="wandb", path=str(log), scalars={}, problems=notes)
    rows = bad = 0
    global_step_seen = False
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                bad += 1
                continue
            if not isinstance(rec, dict) or rec.get("type") != "history":
                continue
            hist = rec.get("history") or {}
            item = (hist.get("item") if isinstance(hist, dict) else None) or {}
            if not isinstance(item, dict):
                continue
            step: Any = next(
                (item[k] for k in GLOBAL_STEP_KEYS if isinstance(item.get(k), (int, float))), None
            )
            if step is not None:
                global_step_seen = True
            else:
                num = hist.get("step") if isinstance(hist, dict) else None
                step = num.get("num", item.get("_step")) if isinstance(num, dict) else item.get("_step")
            try:
                step = int(step)
            except (TypeError, ValueError, OverflowError):  # OverflowError: a step of inf
                bad += 1
                continue
            rows += 1
            for key, value in item.items():
                if key.startswith("_") or isinstance(value, (bool, dict, list)) or value is None:
                    continue
                if isinstance(value, (int, float)) or value in ("NaN", "Infinity", "-Infinity"):
                    out.scalars.setdefault(key, []).append((step, finite_or_nan(value)))
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if code != 0 and not rows:
        raise LogImportError(
            f"{log}: wandb's reader `wandb leet inspect --json` failed (exit {code}; it needs "
            f"wandb >= 0.31): {err.strip()[-500:]}"
        )
    if code != 0:
        out.problems.append(f"wandb's reader stopped early (exit {code}); {rows} history rows read")
    if bad:
        out.problems.append(f"{bad} record(s) from wandb's reader were not usable")
    if global_step_seen:
        out.step_base = 1
    return out


def _detect(path: Path) -> bool:
    if path.is_dir():
        return (
            any(path.glob("*.wandb"))
            or any(path.glob("offline-run-*/*.wandb"))  # the `wandb/` dir itself: its latest run
            or (path.name.startswith(("offline-run-", "run-")) and (path / "files").is_dir())
        )
    return path.is_file() and path.suffix == ".wandb" and not path.name.startswith(TB_PREFIX)


def _read(path: Path, options: ImportOptions) -> RunData:
    return log_run(read_wandb_offline(path), options, SOURCE.title)


SOURCE = Source(
    name="wandb",
    title="W&B offline run",
    accepts="a W&B offline run dir wandb/offline-run-*",
    detect=_detect,
    read=_read,
)
