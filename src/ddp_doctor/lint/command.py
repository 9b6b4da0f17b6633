"""``ddp-doctor lint PATH...``: static checks for distributed-training pitfalls.

Exit codes (cli_common.ExitCode, docs/cli.md): 0 nothing at warning level or above; 1 a finding of
severity error or warning; 2 usage or input error (unknown ID or format, a path that does not
exist, a file that cannot be read, parsed or fixed). Only stdlib modules are imported: no torch.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ddp_doctor.cli_common import ExitCode, Lang, LintFormat, fail


def _ids(values: list[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(i.strip() for v in values for i in v.split(",") if i.strip())


def lint(
    paths: list[Path] = typer.Argument(..., help="Files, directories (recursive) or notebooks to check."),
    format: LintFormat = typer.Option(LintFormat.text, "--format", "-f"),
    select: list[str] = typer.Option(
        None, "--select", help="Only these lint IDs (comma-separated or repeated)."
    ),
    ignore: list[str] = typer.Option(
        None, "--ignore", help="Skip these lint IDs (comma-separated or repeated)."
    ),
    fix: bool = typer.Option(
        False, "--fix", help="Apply the mechanical autofixes in place (.py files only)."
    ),
    lang: Lang = typer.Option(Lang.en, "--lang"),
    project: bool = typer.Option(
        True,
        "--project/--no-project",
        help="Read each directory as one project so facts cross files (default); --no-project lints "
        "every file on its own.",
    ),
    respect_gitignore: bool = typer.Option(
        True,
        "--respect-gitignore/--no-respect-gitignore",
        help=".gitignore patterns hide untracked files in folders (default; files git tracks are always "
        "read); --no-respect-gitignore reads them all.",
    ),
) -> None:
    """Find distributed-training pitfalls in source code, without running it."""
    from ddp_doctor.lint.engine import lint_paths
    from ddp_doctor.lint.output import RENDERERS

    missing = [str(p) for p in paths if _unreachable(p) == "missing"]
    if missing:
        fail(f"no such file or directory: {', '.join(missing)}")
    denied = [f"{p} ({why})" for p in paths if (why := _unreachable(p)) not in (None, "missing")]
    if denied:  # a folder on the way we may not enter: stat itself fails
        fail(f"cannot access {', '.join(denied)}")
    try:
        result = lint_paths(
            paths,
            select=_ids(select),
            ignore=_ids(ignore) or (),
            fix=fix,
            project=project,
            respect_gitignore=respect_gitignore,
        )
    except ValueError as exc:  # unknown IDs on the command line or in [tool.ddp-doctor]
        fail(str(exc))
    except OSError as exc:  # --fix on a file that cannot be replaced (read-only, ...)
        fail(str(exc))
    typer.echo(RENDERERS[format.value](result, lang.value))
    if result.diagnostics:
        raise typer.Exit(ExitCode.USAGE)
    if any(f.severity in ("error", "warning") for f in result.findings):
        raise typer.Exit(ExitCode.FINDINGS)
    raise typer.Exit(ExitCode.OK)


def _unreachable(path: Path) -> str | None:
    """None when ``path`` exists, "missing" when it does not, else why it cannot be looked at."""
    try:
        return None if path.exists() else "missing"
    except OSError as exc:  # Python 3.11: Path.exists raises PermissionError for EACCES
        return exc.strerror or type(exc).__name__


def register(app: typer.Typer) -> None:
    """Add ``lint`` to the root app."""
    app.command("lint")(lint)
