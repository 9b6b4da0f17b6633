"""The `ddp-doctor` command line: thin, one sub-command per area of the package.

Each area owns a `command.py` with a `register(app)` function that adds its sub-command(s);
this module only assembles them. Command modules import typer and nothing heavy at import
time, so `ddp-doctor --help` stays fast. The typer app is built on first use (``ddp_doctor.cli.app``):
:func:`main` first lets report/warm.py print a cached report of an unchanged run, which needs
neither typer nor the analysis.

Exit codes (public, see docs/cli.md): 0 ok, 1 lint findings of severity error/warning,
2 usage or input error. `run` passes the training command's own exit code through.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from ddp_doctor import __version__

if TYPE_CHECKING:
    import typer

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

_app: typer.Typer | None = None


def build_app() -> typer.Typer:
    """The root app with every area's commands."""
    import typer

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

    for module in COMMAND_MODULES:
        importlib.import_module(module).register(app)
    return app


def __getattr__(name: str) -> Any:
    """``app``: the typer app, built once on first use."""
    global _app
    if name == "app":
        if _app is None:
            _app = build_app()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    from ddp_doctor.report.warm import serve

    if not serve(sys.argv[1:]):  # a cached report of an unchanged run, without typer (report/warm.py)
        __getattr__("app")()


if __name__ == "__main__":
    main()
