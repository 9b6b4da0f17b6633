"""The terminal console of the text report (rich only: a warm report from the cache imports no analysis)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

# Width when the output is piped or captured (CI logs, files): wide enough for the tables.
PIPED_WIDTH = 120


def report_console() -> Console:
    """A console for the report: colour and the terminal's width on a TTY, plain 120 columns otherwise."""
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=PIPED_WIDTH)


def console_key(console: Console) -> list[Any]:
    """What the rendered text depends on besides the diagnosis (report/cache.py keys on it)."""
    return [console.width, console.color_system, console.is_terminal, console.legacy_windows]
