"""`ddp-doctor compare RUN_A RUN_B`: two runs of your script, aligned by data consumed, and why they
differ ("one GPU was stable, four GPUs oscillate"). RUN_A is the reference (the stable run). Either
side may be a log that `report` imports (docs/import.md): it is compared as the reduced run it gives.

Exit codes: 0 compared (whatever the conclusion); 1 with ``--assert-equal`` when the aligned curves
differ beyond ``--rtol``/``--atol``; 2 for a path that is not a run, or bad flags.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ddp_doctor.cli_common import ExitCode, Lang, ReportFormat, check_output, fail, write_output
from ddp_doctor.core.terminal import safe


def register(app: typer.Typer) -> None:
    """Add `compare` to the root app."""
    app.command("compare")(compare_cmd)


def compare_cmd(
    run_a: Path = typer.Argument(
        ...,
        help="The reference run (e.g. the stable 1-GPU run): a run directory, or a log "
        "`report` can import (trainer_state.json, TensorBoard, W&B offline).",
    ),
    run_b: Path = typer.Argument(..., help="The run to explain (e.g. the 4-GPU run), same kinds."),
    fmt: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f"),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the comparison here."),
    lang: Lang = typer.Option(Lang.en, "--lang"),
    assert_equal: bool = typer.Option(
        False, "--assert-equal", help="Exit 1 when the aligned loss curves differ beyond the tolerance."
    ),
    rtol: float = typer.Option(None, "--rtol", help="Relative tolerance for --assert-equal (default 1e-4)."),
    atol: float = typer.Option(None, "--atol", help="Absolute tolerance for --assert-equal (default 1e-6)."),
    batch_a: float = typer.Option(
        None,
        "--batch-a",
        help="Global samples per optimizer step of run A, when the probe could not see it.",
    ),
    batch_b: float = typer.Option(None, "--batch-b", help="Same for run B."),
) -> None:
    """Compare two runs aligned by samples consumed: settings, curves, noise, and the likely cause."""
    check_output(output)
    for name, v in (("--rtol", rtol), ("--atol", atol), ("--batch-a", batch_a), ("--batch-b", batch_b)):
        if v is not None and not (v >= 0 and v < float("inf")):
            fail(f"{name} must be a finite number ≥ 0, got {v}")
    from ddp_doctor.compare import render as r
    from ddp_doctor.compare.analysis import DEFAULT_ATOL, DEFAULT_RTOL, compare
    from ddp_doctor.report.load import diagnose_path
    from ddp_doctor.rundir.reader import RunDirError

    diags = []
    for p in (run_a, run_b):
        try:
            diags.append(diagnose_path(p))  # a run dir, or a log imported as a reduced run
        except (RunDirError, OSError) as exc:
            fail(str(exc))
    c = compare(diags[0], diags[1], (run_a.name or str(run_a), run_b.name or str(run_b)), (batch_a, batch_b))
    if fmt is ReportFormat.json:
        text = r.render_json(c) + "\n"
    elif fmt is ReportFormat.html:
        text = r.render_html(c, lang.value)
    else:
        text = r.render_text(c, lang.value)
    if output is not None:
        write_output(output, text)
        typer.echo(f"comparison written to {safe(output)}", err=True)
    else:
        typer.echo(text, nl=False)
    if assert_equal:
        ok, detail = c.assert_equal(
            DEFAULT_RTOL if rtol is None else rtol, DEFAULT_ATOL if atol is None else atol
        )
        msg = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in detail.items())
        typer.echo(f"assert-equal: {'passed' if ok else 'FAILED'} ({msg})", err=True)
        if not ok:
            raise typer.Exit(ExitCode.FINDINGS)
