"""The `ddp-doctor` command line: thin, one sub-command per area of the package.

Each area owns a `command.py` with a `register(app)` function that adds its sub-command(s);
this module only assembles them. Command modules import typer and nothing heavy at import
time, so `ddp-doctor --help` stays fast.

Exit codes (public, see docs/cli.md): 0 ok, 1 lint findings of severity error/warning,
2 usage or input error. `run` passes the training command's own exit code through.
"""

from __future__ import annotations

import importlib

import typer

from ddp_doctor import __version__

COMMAND_MODULES: tuple[str, ...] = (
    "ddp_doctor.launch.command",  # run
    "ddp_doctor.report.command",  # report
    "ddp_doctor.report.summarize_command",  # summarize
    "ddp_doctor.watch.command",  # watch
    "ddp_doctor.compare.command",  # compare
    "ddp_doctor.lint.command",  # lint
    "ddp_doctor.trainer.command",  # train
    "ddp_doctor.demo",  # demo
    "ddp_doctor.experiments.command",  # verify, ablate
    "ddp_doctor.plan.command",  # plan
    "ddp_doctor.experiments.equiv_command",  # equiv
)

app = typer.Typer(
    name="ddp-doctor",
    help="Why does my distributed PyTorch training loss oscillate or spike when one GPU was fine?\n\n"
    "ddp-doctor measures each forum hypothesis and says: confirmed, ruled out (with the number), "
    "or not measured.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ddp-doctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """ddp-doctor: measured answers for unstable distributed training."""


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
