"""What both trainer callbacks do, in plain functions that never raise into training.

* :func:`start` — ``ddp_doctor.attach()`` with the run directory: the one ``ddp-doctor run`` set in
  the environment, else the callback's, else ``<output dir>/ddp-doctor``. Works when a launcher
  dropped the environment (the explicit-attach path of probe/attach.py).
* :class:`LossLog` — rank 0 appends the loss the trainer logs to ``RUN/trainer/metrics.jsonl``
  (``{"step", "loss"}``, the run-format's trainer metrics: the ``rank0-only-loss-log`` check
  compares it with rank 0's and the global loss). ``step`` is the 0-based optimizer step.
* :func:`summarise` — rank 0 diagnoses the run directory, writes ``report.json`` and
  ``report.html`` into it and returns a few lines (hypotheses confirmed, findings) to print.

Every entry point catches every exception and turns it into a warning: a diagnosis tool must not
end a training run.
"""

from __future__ import annotations

import functools
import json
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_SUBDIR = "ddp-doctor"
MAX_SUMMARY_FINDINGS = 8


def _warn(what: str, exc: BaseException) -> None:
    warnings.warn(f"ddp-doctor: {what} failed ({type(exc).__name__}: {exc}); training goes on", stacklevel=3)


def safe(hook: F) -> F:
    """A callback hook that turns any exception into a warning and returns None (the trainers
    treat a None return as "no change")."""

    @functools.wraps(hook)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return hook(*args, **kwargs)
        except Exception as exc:
            _warn(f"callback hook {hook.__name__}", exc)
            return None

    return wrapper  # type: ignore[return-value]


def start(
    run_dir: str | os.PathLike[str] | None, fallback: str | os.PathLike[str] | None, **options: Any
) -> Path | None:
    """Attach the probe; return its run directory (None if attaching failed)."""
    try:
        from ddp_doctor.probe.attach import attach
        from ddp_doctor.probe.options import ProbeOptions
        from ddp_doctor.probe.state import PROBE

        if run_dir is None and ProbeOptions.from_env() is None:
            run_dir = Path(fallback or ".") / DEFAULT_SUBDIR
        attach(run_dir=run_dir, **{k: v for k, v in options.items() if v is not None})
        return Path(PROBE.options.run_dir) if PROBE.options is not None else None
    except Exception as exc:
        _warn("attaching the probe", exc)
        return None


def scalar(value: Any) -> float | None:
    """A logged loss as a float: Python numbers and one-element tensors (read with .item())."""
    try:
        if hasattr(value, "item"):
            value = value.item()
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return None


class LossLog:
    """Rank 0's ``trainer/metrics.jsonl``: one line per logged loss, flushed at once."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def open(self, run_dir: Path | None, rank: int) -> None:
        self.path = run_dir / "trainer" / "metrics.jsonl" if run_dir is not None and rank == 0 else None

    def write(self, step: int, loss: Any, **extra: Any) -> None:
        if self.path is None:
            return
        value = scalar(loss)
        if value is None or step < 0:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            rec = {"step": int(step), "loss": value if math.isfinite(value) else str(value), **extra}
            from ddp_doctor.core.safe_io import open_append

            with open_append(self.path) as f:
                f.write(json.dumps(rec) + "\n")
        except Exception as exc:
            _warn("recording the logged loss", exc)
            self.path = None


def summarise(run_dir: Path | None) -> str | None:
    """Diagnose ``run_dir``; write report.json and report.html there; return a short summary."""
    if run_dir is None:
        return None
    try:
        from ddp_doctor.analysis.diagnose import diagnose
        from ddp_doctor.core.safe_io import PRIVATE_FILE, write_text
        from ddp_doctor.report.html import render_html
        from ddp_doctor.report.to_json import render_json

        diag = diagnose(run_dir)
        write_text(run_dir / "report.json", render_json(diag) + "\n", mode=PRIVATE_FILE)
        write_text(run_dir / "report.html", render_html(diag), mode=PRIVATE_FILE)
        confirmed = [f for f in diag.findings if f.status == "confirmed"]
        hyps = [h.id for h in diag.hypotheses if h.verdict == "confirmed"]
        lines = [
            f"ddp-doctor: {len(confirmed)} confirmed finding(s); hypotheses confirmed: "
            f"{', '.join(hyps) or 'none'}; report: {run_dir / 'report.html'}"
        ]
        lines += [f"  {f.severity}: {f.id}: {f.summary}" for f in confirmed[:MAX_SUMMARY_FINDINGS]]
        return "\n".join(lines)
    except Exception as exc:
        _warn("the end-of-training diagnosis", exc)
        return None
