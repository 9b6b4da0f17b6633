"""ddp-doctor: measured answers to "why is my distributed training loss unstable?".

Importing this package stays light (no torch, no transformers): the CLI, the lint engine and
the report renderers must start fast. Heavy modules are imported where they are used.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "attach"]


def attach(**options: object) -> None:
    """Start the runtime probe inside this process, for launchers that drop the environment.

    Equivalent to what `ddp-doctor run` injects through sitecustomize; see docs/probe.md.
    """
    from ddp_doctor.probe.attach import attach as _attach

    _attach(**options)
