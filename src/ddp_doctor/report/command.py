"""CLI sub-command(s) of ddp_doctor.report (placeholder until the area lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this area's sub-commands to the root app."""
