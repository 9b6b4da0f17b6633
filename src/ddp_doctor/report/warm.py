"""A warm `ddp-doctor report`: the cached report of an unchanged run, printed before typer is imported.

``ddp-doctor report DIR [--format F] [--output FILE] [--lang L] [--rollups M] [--steps A-B]...`` on a
run directory whose report is cached (report/cache.py) is served here, by :func:`ddp_doctor.cli.main`,
before the command line is built: typer and the pydantic adapters it builds for the command's 16
options cost ~0.3 CPU-s per call, four times the rest of a warm report. Anything else — another
option, ``--help``, an argument in a form not read here, no cache entry, a stale one, an output that
cannot be written — returns False and the ordinary command runs (and validates, and reports errors).

Only the options' spelling is read here. A value the command would reject never has a cache entry
(entries are written only by a report that ran), so it always falls through to the command. The
defaults are the command's (tests/report/test_report_cache.py checks them against report/command.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# option -> (field, repeatable); the defaults below are report/command.py's
_OPTIONS = {
    "--format": ("fmt", False),
    "-f": ("fmt", False),
    "--output": ("output", False),
    "-o": ("output", False),
    "--lang": ("lang", False),
    "--rollups": ("rollups", False),
    "--steps": ("steps", True),
}
DEFAULTS: dict[str, Any] = {"fmt": "text", "output": None, "lang": "en", "rollups": "auto", "steps": []}


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The report's run directory and options from ``argv`` (after the program name), or None for
    anything this fast path does not serve."""
    if not argv or argv[0] != "report":
        return None
    got: dict[str, Any] = dict(DEFAULTS, steps=[], run=None)
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if name not in _OPTIONS or (eq and not name.startswith("--")):
                return None
            if not eq:
                i += 1
                if i >= len(argv):
                    return None
                value = argv[i]
            field, repeatable = _OPTIONS[name]
            if repeatable:
                got[field].append(value)
            else:
                got[field] = value
        elif got["run"] is None and arg:
            got["run"] = arg
        else:
            return None
        i += 1
    return got if got["run"] is not None else None


def serve(argv: list[str]) -> bool:
    """Print (or write) the cached report that ``argv`` asks for; False when there is none to serve."""
    opts = parse(argv)
    if opts is None:
        return False
    from ddp_doctor.report import cache

    output = Path(opts["output"]) if opts["output"] is not None else None
    req = cache.request_for(
        Path(opts["run"]), opts["fmt"], output, opts["lang"], opts["rollups"], opts["steps"]
    )
    if req is None:
        return False
    hit = cache.load(req)
    if hit is None:
        return False
    target = req.output if opts["fmt"] == "html" else output
    if target is None:
        sys.stdout.write(hit.output)
        sys.stdout.flush()
        return True
    from ddp_doctor.core.safe_io import write_text
    from ddp_doctor.core.terminal import safe

    try:
        write_text(target, hit.output)  # atomic, never through a planted symlink
    except OSError:
        return False  # the command says why, with its exit code
    print(f"report written to {safe(target)}", file=sys.stderr)
    return True
