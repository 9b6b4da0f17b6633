"""ddp-doctor: measured answers to "why is my distributed training loss unstable?".

Importing this package stays light (no torch, no transformers): the CLI, the lint engine and
the report renderers must start fast. Heavy modules are imported where they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from ddp_doctor.report.load import Report

__version__ = "0.1.0"

__all__ = ["__version__", "attach", "load"]


def attach(**options: Any) -> None:
    """Start the runtime probe inside this process, for launchers that drop the environment.

    Equivalent to what `ddp-doctor run` injects through sitecustomize; see docs/probe.md.
    """
    from ddp_doctor.probe.attach import attach as _attach

    _attach(**options)


def load(path: Path | str, **options: Any) -> Report:
    """Diagnose a run directory or an imported log; returns a :class:`ddp_doctor.report.load.Report`.

    Options (``world_size``, ``micro_batch``, ``accum``, ``tokens_per_sample``, ``max_norm``,
    ``keys``) are those of ``ddp-doctor report``; see docs/api.md.
    """
    from ddp_doctor.report.load import load as _load

    return _load(path, **options)
