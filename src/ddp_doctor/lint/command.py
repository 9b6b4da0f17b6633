"""``ddp-doctor lint PATH...``: static checks for distributed-training pitfalls.

Exit codes (../shared/catalog.md): 0 nothing at warning level or above; 1 a finding of
severity error or warning; 2 usage or input error (unknown ID or format, a path that does not
exist, a file that cannot be read or parsed). Only stdlib modules are imported: no torch.
"""

from __future__ import annotations

from pathlib import Path

import typer

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


def _ids(values: list[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(i.strip() for v in values for i in v.split(",") if i.strip())


def lint(
    paths: list[Path] = typer.Argument(..., help="Files, directories (recursive) or notebooks to check."),
    format: str = typer.Option("text", "--format", "-f", help="text, json or sarif."),
    select: list[str] = typer.Option(
        None, "--select", help="Only these lint IDs (comma-separated or repeated)."
    ),
    ignore: list[str] = typer.Option(
        None, "--ignore", help="Skip these lint IDs (comma-separated or repeated)."
    ),
    fix: bool = typer.Option(
        False, "--fix", help="Apply the mechanical autofixes in place (.py files only)."
    ),
    lang: str = typer.Option("en", "--lang", help="en or zh."),
    project: bool = typer.Option(
        True,
        "--project/--no-project",
        help="Read each directory as one project so facts cross files (default); --no-project lints "
        "every file on its own.",
    ),
) -> None:
    """Find distributed-training pitfalls in source code, without running it."""
    from ddp_doctor.lint.engine import lint_paths
    from ddp_doctor.lint.output import RENDERERS

    if format not in RENDERERS or lang not in ("en", "zh"):
        typer.echo(f"error: --format must be one of {', '.join(RENDERERS)} and --lang en or zh", err=True)
        raise typer.Exit(EXIT_INPUT)
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        typer.echo(f"error: no such file or directory: {', '.join(missing)}", err=True)
        raise typer.Exit(EXIT_INPUT)
    try:
        result = lint_paths(paths, select=_ids(select), ignore=_ids(ignore) or (), fix=fix, project=project)
    except ValueError as exc:  # unknown IDs on the command line or in [tool.ddp-doctor]
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_INPUT) from None
    typer.echo(RENDERERS[format](result, lang))  # type: ignore[arg-type]
    if result.diagnostics:
        raise typer.Exit(EXIT_INPUT)
    if any(f.severity in ("error", "warning") for f in result.findings):
        raise typer.Exit(EXIT_FINDINGS)
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    """Add ``lint`` to the root app."""
    app.command("lint")(lint)
