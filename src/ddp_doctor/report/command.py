"""`ddp-doctor report PATH [--format text|json|html] [--output FILE] [--lang en|zh]`.

PATH is a run directory or a log the user already has (HF trainer_state.json, TensorBoard events,
W&B offline run: docs/import.md; `--key`, `--world-size` … fill in what a log lacks). Exit 0 with a
report (also for a run in progress or with damaged files: the problems are listed in the report),
1 with `--fail-on LEVEL` when a confirmed finding is at least that severe, 2 for a path that is
neither a run nor a supported log, or bad flags. Heavy imports happen inside the command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ddp_doctor.cli_common import ExitCode, FailOn, Lang, ReportFormat, fail, write_output
from ddp_doctor.core.terminal import safe

if TYPE_CHECKING:
    from ddp_doctor.analysis.diagnose import Diagnosis

EXPORTS = ("tensorboard", "wandb")


def render(diag: Diagnosis, fmt: str = "text", lang: str = "en") -> str:
    """The report of a diagnosis in ``fmt``."""
    if fmt == "json":
        from ddp_doctor.report.to_json import render_json

        return render_json(diag, lang) + "\n"  # type: ignore[arg-type]
    if fmt == "html":
        from ddp_doctor.report.html import render_html

        return render_html(diag, lang)  # type: ignore[arg-type]
    from ddp_doctor.report.text import render_text

    return render_text(diag, lang)  # type: ignore[arg-type]


def write_report(run_dir: Path, fmt: str = "text", output: Path | None = None, lang: str = "en") -> str:
    """Diagnose ``run_dir`` and return the rendered report; also write it to ``output`` if given.

    Raises :class:`ddp_doctor.rundir.reader.RunDirError` for a directory that is not a run. Used by the
    CLI and by `ddp-doctor demo`.
    """
    from ddp_doctor.report.load import diagnose_path

    out = render(diagnose_path(run_dir), fmt, lang)
    if output is not None:
        from ddp_doctor.core.safe_io import write_text

        write_text(output, out)  # atomic, never through a planted symlink
    return out


def parse_export(value: str) -> tuple[str, Path | None]:
    """``"tensorboard"`` / ``"tensorboard=DIR"`` / ``"wandb"`` → (target, DIR or None)."""
    target, _, where = value.partition("=")
    if target not in EXPORTS:
        raise ValueError(f"--export must be tensorboard[=DIR] or wandb[=DIR], got {value!r}")
    return target, Path(where) if where else None


def parse_rollups(value: str) -> str:
    from ddp_doctor.rundir.reader import ROLLUP_MODES

    if value not in ROLLUP_MODES:
        raise ValueError(f"--rollups must be one of {', '.join(ROLLUP_MODES)}, got {value!r}")
    return value


def parse_steps(value: str) -> tuple[int, int]:
    """``"A-B"`` (or ``"A"``) as (A, B): steps the rollup path reads raw."""
    from ddp_doctor.rundir.summarize import parse_span

    return parse_span(value, "--steps", "step numbers")


def default_export_dir(path: Path) -> Path:
    """RUN/tensorboard for a run dir; beside an imported log (so TensorBoard shows both)."""
    from ddp_doctor.rundir.sources import detect

    if detect(path) == "rundir":
        return path / "tensorboard"
    return (path if path.is_dir() else path.parent) / "ddp-doctor"


def export(diag: Diagnosis, target: str, where: Path | None, source: Path) -> str:
    """Run one exporter; return where it wrote. Raises ExportError."""
    if target == "tensorboard":
        from ddp_doctor.report.export_tensorboard import export_tensorboard

        return str(export_tensorboard(diag, where or default_export_dir(source)))
    from ddp_doctor.report.export_wandb import export_wandb

    return export_wandb(diag, where)


def register(app: typer.Typer) -> None:
    """Add `report` to the root app."""
    app.command("report")(report)


def report(
    run_dir: Path = typer.Argument(
        ...,
        help="Run directory written by `ddp-doctor run`, or a log: HF trainer_state.json, "
        "TensorBoard log dir / event file, W&B offline run dir (docs/import.md).",
    ),
    fmt_choice: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f"),
    output: Path = typer.Option(
        None, "--output", "-o", help="Write the report here (html default: DIR/report.html)."
    ),
    lang_choice: Lang = typer.Option(Lang.en, "--lang"),
    fail_on: FailOn | None = typer.Option(
        None,
        "--fail-on",
        help="Exit 1 when a confirmed finding is at least this severe.",
    ),
    exports: list[str] | None = typer.Option(
        None,
        "--export",
        metavar="tensorboard[=DIR]|wandb",
        help="Also write the curves and findings to TensorBoard (default DIR: RUN/tensorboard, or "
        "beside the log) or W&B (the active run, else an offline one). Repeatable.",
    ),
    keys: list[str] | None = typer.Option(
        None,
        "--key",
        metavar="FIELD=NAME",
        help="Imported logs: scalar NAME is FIELD (loss, grad_norm, "
        "lr, loss_scale, epoch), e.g. --key loss=my/loss. Repeatable.",
    ),
    world_size: int = typer.Option(None, "--world-size", min=1, help="Imported logs: number of ranks."),
    micro_batch: int = typer.Option(
        None, "--micro-batch", min=1, help="Imported logs: samples per rank per micro-step."
    ),
    accum: int = typer.Option(None, "--accum", min=1, help="Imported logs: micro-steps per optimizer step."),
    tokens_per_sample: int = typer.Option(
        None, "--tokens-per-sample", min=1, help="Imported logs: tokens per sample."
    ),
    max_norm: float = typer.Option(
        None, "--max-norm", help="Imported logs: the clip_grad_norm_ max_norm used."
    ),
    rollups: str = typer.Option(
        "auto",
        "--rollups",
        help="Run directories: read the rollup index and only the windows that matter raw ('on'), every "
        "step raw ('off'), or 'auto' (the rollups for rank files of 256 MiB and more that have an index).",
    ),
    steps: list[str] | None = typer.Option(
        None, "--steps", metavar="A-B", help="Rollup path: also read steps A..B raw. Repeatable."
    ),
) -> None:
    """Diagnose a run: every hypothesis confirmed, ruled out (with numbers) or not measured."""
    fmt, lang = fmt_choice.value, lang_choice.value
    imported = (keys, world_size, micro_batch, accum, tokens_per_sample, max_norm)
    req = None
    if not exports and all(x is None for x in imported):
        # a run directory unchanged since its last report: print that one (report/cache.py); only
        # this module, the cache and rich are imported before this point
        from ddp_doctor.report import cache as report_cache

        req = report_cache.request_for(run_dir, fmt, output, lang, rollups, steps or [])
        if req is not None:
            hit = report_cache.load(req)
            if hit is not None:
                _emit(hit.output, fmt, req.output if fmt == "html" else output)
                _check_fail_on(fail_on, hit.confirmed)
                return
    _report_fresh(run_dir, fmt, output, lang, fail_on, exports, imported, rollups, steps, req)


def _emit(text: str, fmt: str, output: Path | None) -> None:
    """Print the report (text to a terminal: as rendered, colours included) or write it to ``output``."""
    if output is None:
        if fmt == "text":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            typer.echo(text, nl=False)
    else:
        write_output(output, text)  # atomic, no symlink follow; unwritable: exit 2
        typer.echo(f"report written to {safe(output)}", err=True)


def _check_fail_on(fail_on: FailOn | None, confirmed: list[tuple[str, str]]) -> None:
    """``--fail-on``: exit 1 when a confirmed finding is at least that severe."""
    if fail_on is None:
        return
    from ddp_doctor.core.findings import SEVERITY_ORDER

    limit = SEVERITY_ORDER[fail_on.value]
    bad = [fid for fid, severity in confirmed if SEVERITY_ORDER[severity] <= limit]
    if bad:
        typer.echo(f"--fail-on {fail_on.value}: {len(bad)} confirmed finding(s): {', '.join(bad)}", err=True)
        raise typer.Exit(ExitCode.FINDINGS)


def _report_fresh(
    run_dir: Path,
    fmt: str,
    output: Path | None,
    lang: str,
    fail_on: FailOn | None,
    exports: list[str] | None,
    imported: tuple[Any, ...],
    rollups: str,
    steps: list[str] | None,
    req: Any,
) -> None:
    """The report computed from the run (and cached when ``req`` says it may be)."""
    from ddp_doctor.report import cache as report_cache
    from ddp_doctor.report.export_tensorboard import ExportError
    from ddp_doctor.report.load import diagnose_path
    from ddp_doctor.rundir.reader import RunDirError
    from ddp_doctor.rundir.sources.series import ImportOptions, KeyError_, parse_keys

    keys, world_size, micro_batch, accum, tokens_per_sample, max_norm = imported
    try:
        targets = [parse_export(e) for e in exports or []]
        options = ImportOptions(
            keys=parse_keys(keys),
            world_size=world_size,
            micro_batch=micro_batch,
            accum=accum,
            tokens_per_sample=tokens_per_sample,
            max_norm=max_norm,
            rollups=parse_rollups(rollups),
            steps=tuple(parse_steps(s) for s in steps or []),
        )
    except (ValueError, KeyError_) as exc:
        fail(str(exc))
    before = report_cache.fingerprint(req) if req is not None else None
    cacheable = before is not None and before[1] >= report_cache.CACHE_MIN_BYTES
    try:
        diag = diagnose_path(run_dir, options)
    except RunDirError as exc:
        fail(str(exc))
    if "imported" in diag.run_info:
        cacheable = False
    if fmt == "html" and output is None and run_dir.is_dir() and "imported" not in diag.run_info:
        output = run_dir / "report.html"
    if fmt == "text" and output is None:
        from ddp_doctor.report.console import report_console
        from ddp_doctor.report.text import render_console

        console = report_console()
        if cacheable:  # rendered once, printed as rendered and kept
            with console.capture() as captured:
                render_console(diag, console, lang)  # type: ignore[arg-type]
            text = captured.get()
            _emit(text, fmt, None)
        else:
            render_console(diag, console, lang)  # type: ignore[arg-type]
    else:
        text = render(diag, fmt, lang)
        _emit(text, fmt, output)
    if cacheable:
        confirmed = [(f.id, str(f.severity)) for f in diag.findings if f.status == "confirmed"]
        report_cache.save(req, before, report_cache.Entry(text, confirmed))
    for target, where in targets:
        try:
            typer.echo(f"exported to {target}: {safe(export(diag, target, where, run_dir))}", err=True)
        except ExportError as exc:
            fail(str(exc))
    if fail_on is not None:
        from ddp_doctor.report.load import failing

        bad = failing(diag, fail_on.value)
        if bad:
            typer.echo(
                f"--fail-on {fail_on.value}: {len(bad)} confirmed finding(s): {', '.join(f.id for f in bad)}",
                err=True,
            )
            raise typer.Exit(ExitCode.FINDINGS)
