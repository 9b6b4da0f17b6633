"""`ddp-doctor equiv`: is the N-rank step the 1-rank step? Stage by stage, per parameter (docs/equivalence.md).

Either compares two run directories that carry fingerprints (`ddp-doctor run --fingerprints K`), or
runs the user's unmodified script twice under the probe — `torchrun --nproc_per_node 1` and
`--nproc_per_node N` through `ddp-doctor run`'s launcher — with the per-world-size flags the user
gives (`--one "--accum 8" --many "--accum 4"`: the same global batch) and `--set` interventions,
then compares them (ddp_doctor.equiv). The comparison lives in ddp_doctor.equiv (beside compare,
which uses it); this launching half is here because it starts runs (launch/ sits above equiv).

Exit codes: 0 equivalent, 1 break, 2 undecided (no fingerprints, data differs) or bad input.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import typer

from ddp_doctor.cli_common import Lang, ReportFormat, check_output, fail, write_output
from ddp_doctor.core.terminal import safe
from ddp_doctor.probe.interventions import help_text
from ddp_doctor.probe.options import DEFAULT_FINGERPRINT_STEPS


def register(app: typer.Typer) -> None:
    app.command(
        "equiv",
        context_settings={"allow_interspersed_args": False},
        help="Prove or break the 1-vs-N equivalence of a training step, stage by stage and per parameter.\n\n"
        "Examples: ddp-doctor equiv RUN_1GPU RUN_NGPU\n\n"
        'ddp-doctor equiv --nproc 4 --one "--accum 8" --many "--accum 2" -- train.py --lr 3e-4',
    )(equiv_cmd)


def equiv_cmd(
    args: list[str] | None = typer.Argument(
        None,
        metavar="[RUN_A RUN_B | -- SCRIPT [ARGS]...]",
        help="Two run directories with fingerprints, or (after --) the script to run at world size 1 and N.",
    ),
    nproc: int = typer.Option(2, "--nproc", min=2, help="N: ranks of the second run."),
    one: str = typer.Option("", "--one", help="Extra script flags at world size 1 (e.g. '--accum 8')."),
    many: str = typer.Option("", "--many", help="Extra script flags at world size N (e.g. '--accum 4')."),
    steps: int = typer.Option(
        DEFAULT_FINGERPRINT_STEPS, "--steps", min=1, max=50, help="Optimizer steps fingerprinted (K)."
    ),
    sets: list[str] | None = typer.Option(None, "--set", metavar="KEY=VALUE", help=help_text()),
    out: Path | None = typer.Option(None, "--out", help="Where the two runs go (OUT/one, OUT/many)."),
    fmt: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f", help="text or json."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the result here."),
    lang: Lang = typer.Option(Lang.en, "--lang"),
    ranks: str | None = typer.Option(
        None,
        "--ranks",
        metavar="A-B",
        help="Read only ranks A..B of run B (two run directories): per-rank stages and the ranks' agreement; "
        "the stage local and the whole global batch need every rank and are not judged.",
    ),
) -> None:
    check_output(output)
    if fmt is ReportFormat.html:
        fail("equiv writes text or json", command="equiv")
    items = list(args or [])
    if len(items) == 2 and all(Path(p).is_dir() for p in items):
        paths = (Path(items[0]), Path(items[1]))
    elif items:
        paths = _run_both(items, nproc, one, many, steps, sets or [], out)
    else:
        fail("give two run directories, or -- SCRIPT [ARGS] to run", command="equiv")
    from ddp_doctor.equiv import render, stages, verdict
    from ddp_doctor.rundir.reader import RunDirError
    from ddp_doctor.rundir.summarize import parse_ranks

    try:
        subset = parse_ranks(ranks)
    except ValueError as error:
        fail(str(error), command="equiv")
    try:
        prints = [stages.read(paths[0]), stages.read(paths[1], subset)]
    except (RunDirError, OSError) as error:
        fail(str(error), command="equiv")
    result = verdict.compare(prints[0], prints[1])
    text = (
        render.render_json(result) + "\n"
        if fmt is ReportFormat.json
        else render.render_text(result, lang.value)
    )
    if output is not None:
        write_output(output, text)
        typer.echo(f"equivalence written to {safe(output)}", err=True)
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(result.exit_code)


def torchrun_command(script: list[str], world: int, extra: str) -> list[str]:
    """`python -m torch.distributed.run --standalone --nproc_per_node W SCRIPT... EXTRA...`."""
    if script and Path(script[0]).name.startswith("python"):
        script = script[1:]  # `python train.py`: torchrun runs the script with its own interpreter
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
        *script, *shlex.split(extra),
    ]  # fmt: skip


def _to_stderr(command: list[str], env: dict[str, str]) -> int:
    """The script's own output goes to stderr: stdout carries only the comparison (`--format json`)."""
    import subprocess

    from ddp_doctor.launch.launcher import wait_forwarding_signals

    try:
        child = subprocess.Popen(command, env=env, stdout=sys.stderr)
    except OSError as error:
        sys.stderr.write(f"ddp-doctor equiv: cannot start {command[0]!r}: {error}\n")
        return 127
    return wait_forwarding_signals(child)


def _run_both(
    script: list[str], nproc: int, one: str, many: str, steps: int, sets: list[str], out: Path | None
) -> tuple[Path, Path]:
    from ddp_doctor.launch import launcher
    from ddp_doctor.launch.claim import RunDirBusy
    from ddp_doctor.probe.interventions import ENV_VAR, InterventionError, parse_sets, to_env
    from ddp_doctor.probe.options import ProbeOptions

    base = out if out is not None else launcher.default_run_dir()
    environ = dict(os.environ)
    environ.setdefault("PYTHONHASHSEED", "0")  # seeds fixed where the script leaves them to chance
    if sets:
        try:
            environ[ENV_VAR] = to_env(parse_sets(sets))
        except InterventionError as error:
            fail(f"--set: {error}", command="equiv")
    paths = []
    for name, world, extra in (("one", 1, one), ("many", nproc, many)):
        run_dir = (base / name).resolve()
        command = torchrun_command(script, world, extra)
        typer.echo(f"ddp-doctor equiv: world size {world} → {safe(run_dir)}", err=True)
        options = ProbeOptions(run_dir=run_dir, fingerprints=steps)
        try:
            code = launcher.run(command, options, environ=environ, runner=_to_stderr, require_fresh=True)
        except (RunDirBusy, OSError) as error:
            fail(str(error), command="equiv")
        if code != 0:
            from ddp_doctor.rundir.teardown import classify_run

            if not classify_run(run_dir, code).ok:  # a teardown abort after a complete run is fine
                typer.echo(f"ddp-doctor equiv: the world-size-{world} run exited with {code}", err=True)
        paths.append(run_dir)
    return paths[0], paths[1]
