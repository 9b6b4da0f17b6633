"""What every `ddp-doctor` command shares: exit codes, format/lang choices, errors, output files.

A command module (``<area>/command.py``) defines its command as a plain module-level function
and a ``register(app)`` that adds it with ``app.command("name")(function)``; ``cli.py`` lists the
modules. Options with a fixed set of values are enums from here (typer rejects anything else
with exit code 2 and lists the choices). Errors go through :func:`fail`, files through
:func:`write_output` (atomic, never through a planted symlink; an unwritable destination is a
usage error).
"""

from __future__ import annotations

import os
from enum import Enum, IntEnum
from pathlib import Path
from typing import NoReturn

import typer

from ddp_doctor.core.terminal import safe


class ExitCode(IntEnum):
    """Public (docs/cli.md). `run` passes the training command's own exit code through."""

    OK = 0
    FINDINGS = 1  # lint findings of severity error/warning, `verify` rows not as expected,
    # `report --fail-on` matches, a failed comparison
    USAGE = 2  # usage or input error: bad flag, missing/unreadable input, unwritable output


class Lang(str, Enum):
    en = "en"
    zh = "zh"


class LevelChoice(str, Enum):
    """`run --level` (probe.options.LEVELS)."""

    basic = "basic"
    full = "full"


class FailOn(str, Enum):
    """`report --fail-on`: the least severe confirmed finding that fails (report.load.failing)."""

    error = "error"
    warning = "warning"


class TextJson(str, Enum):
    text = "text"
    json = "json"


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


class LintFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"


def fail(message: str, code: ExitCode = ExitCode.USAGE, *, command: str | None = None) -> NoReturn:
    """Print ``error: message`` (control characters escaped) to stderr and exit with ``code``."""
    prefix = f"ddp-doctor {command}: " if command else ""
    typer.echo(f"{prefix}error: {safe(message)}", err=True)
    raise typer.Exit(int(code))


def check_output(path: Path | None) -> None:
    """Fail early (exit 2) when ``--output`` cannot be written: before any work is done."""
    from ddp_doctor.core.safe_io import OutputError, check_destination

    if path is None:
        return
    try:
        check_destination(path)
    except OutputError as err:
        fail(str(err))


def write_output(path: str | os.PathLike[str], text: str) -> None:
    """Write an output file atomically (safe_write); an unwritable destination exits 2."""
    from ddp_doctor.core.safe_io import write_text

    try:
        write_text(path, text)
    except OSError as err:
        fail(str(err) if err.strerror is None else f"cannot write {path}: {err.strerror}")
