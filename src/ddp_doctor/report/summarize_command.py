"""`ddp-doctor summarize RUN`: rollups of a run's rank files (the per-node map) and their reduce.

One map per node over that node's ranks (``--ranks A-B``), then one ``--reduce`` anywhere
(rundir/summarize.py; docs/report.md, "Rollups and scale"). Exit codes: 0 written, 2 for a path
that is not a run directory, bad flags or an unwritable output.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ddp_doctor.cli_common import TextJson, fail
from ddp_doctor.core.terminal import safe


def register(app: typer.Typer) -> None:
    """Add `summarize` to the root app."""
    app.command("summarize")(summarize_cmd)


def summarize_cmd(
    run_dir: Path = typer.Argument(..., help="The run directory (RUN/ranks/rank-NNNNN.jsonl)."),
    ranks: str = typer.Option(
        None, "--ranks", help="Only ranks A-B (or A): this node's ranks. Default: every rank file."
    ),
    window: int = typer.Option(
        100, "--window", help="R: optimizer steps per rollup window (the probe's default is 100)."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Rank files read in parallel (processes)."),
    force: bool = typer.Option(
        False, "--force", help="Recompute rollups even where RUN/ranks/rollup-NNNNN.jsonl is current."
    ),
    reduce: bool = typer.Option(
        False, "--reduce", help="Merge every RUN/rollups/ranks-*.json into RUN/rollups/summary.json."
    ),
    fmt: TextJson = typer.Option(TextJson.text, "--format", "-f"),
) -> None:
    """Write rollups (sufficient statistics per window of R steps) for some or all ranks, or reduce them."""
    import json

    from ddp_doctor.core.safe_io import OutputError
    from ddp_doctor.rundir import summarize as sm

    try:
        if reduce:
            summary, target = sm.reduce(run_dir)
        else:
            summary, target = sm.summarize(
                run_dir, sm.parse_ranks(ranks), every=window, jobs=max(1, jobs), force=force
            )
    except (OutputError, ValueError, OSError) as err:
        fail(str(err), command="summarize")
    if fmt == TextJson.json:
        typer.echo(
            json.dumps(
                {
                    "written": str(target),
                    "ranks": len(summary["ranks"]),
                    "windows": len(summary["windows"]),
                    "problems": summary["problems"],
                }
            )
        )
        return
    steps = sum(int(t.get("steps") or 0) for t in summary["ranks"].values())
    typer.echo(
        safe(
            f"{target}: {len(summary['ranks'])} rank(s), {len(summary['windows'])} window(s) of "
            f"R={summary['every']}, {steps} rank-step(s)"
        )
    )
    for p in summary["problems"][:20]:
        typer.echo(safe(f"  note: {p}"))
