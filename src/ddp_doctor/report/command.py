"""`ddp-doctor report DIR [--format text|json|html] [--output FILE] [--lang en|zh]`.

Reads a run directory, runs the analysis and renders it. Exit 0 with a report (also for a run in
progress or with damaged files: the problems are listed in the report), 2 for a path that is not a
run directory or bad flags. Heavy imports (numpy, rich tables) happen inside the command.
"""

from __future__ import annotations

from pathlib import Path

import typer

FORMATS = ("text", "json", "html")
LANGS = ("en", "zh")


def write_report(run_dir: Path, fmt: str = "text", output: Path | None = None, lang: str = "en") -> str:
    """Diagnose ``run_dir`` and return the rendered report; also write it to ``output`` if given.

    Raises :class:`ddp_doctor.rundir.RunDirError` for a directory that is not a run. Used by the
    CLI and by `ddp-doctor demo`.
    """
    from ddp_doctor.analysis.diagnose import diagnose

    diag = diagnose(run_dir)
    if fmt == "json":
        from ddp_doctor.report.to_json import render_json

        out = render_json(diag, lang) + "\n"
    elif fmt == "html":
        from ddp_doctor.report.html import render_html

        out = render_html(diag, lang)
    else:
        from ddp_doctor.report.text import render_text

        out = render_text(diag, lang)
    if output is not None:
        Path(output).write_text(out, encoding="utf-8")
    return out


def register(app: typer.Typer) -> None:
    """Add `report` to the root app."""

    @app.command("report")
    def report(
        run_dir: Path = typer.Argument(..., help="Run directory written by `ddp-doctor run`."),
        fmt: str = typer.Option("text", "--format", "-f", help="text | json | html"),
        output: Path = typer.Option(
            None, "--output", "-o", help="Write the report here (html default: DIR/report.html)."
        ),
        lang: str = typer.Option("en", "--lang", help="en | zh"),
    ) -> None:
        """Diagnose a run: every hypothesis confirmed, ruled out (with numbers) or not measured."""
        if fmt not in FORMATS:
            typer.echo(f"error: --format must be one of {', '.join(FORMATS)}, got {fmt!r}", err=True)
            raise typer.Exit(2)
        if lang not in LANGS:
            typer.echo(f"error: --lang must be one of {', '.join(LANGS)}, got {lang!r}", err=True)
            raise typer.Exit(2)
        from ddp_doctor.rundir import RunDirError

        if fmt == "html" and output is None and run_dir.is_dir():
            output = run_dir / "report.html"
        if fmt == "text" and output is None:
            from ddp_doctor.analysis.diagnose import diagnose
            from ddp_doctor.report.text import render_console, report_console

            try:
                diag = diagnose(run_dir)
            except RunDirError as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(2) from None
            render_console(diag, report_console(), lang)
            return
        try:
            text = write_report(run_dir, fmt, output, lang)
        except RunDirError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except OSError as exc:  # --output into a missing directory, onto a directory, read-only, ...
            typer.echo(f"error: cannot write {output}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
        if output is None:
            typer.echo(text, nl=False)
        else:
            typer.echo(f"report written to {output}", err=True)
