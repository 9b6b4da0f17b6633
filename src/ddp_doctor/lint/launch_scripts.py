"""The values the project's shipped launch scripts give a command-line option.

A README says "run ``bash scripts/train.sh``" and the script runs ``torchrun ... train.py
--syncbn=0`` or ``python -m torch.distributed.launch ... main.py --find_unused_parameters``: the
documented run is not the parser's default. Lint reads the shell scripts shipped under the project
root (``*.sh``, found as lint finds source files: the same excludes and ``.gitignore``) for the
option's long spellings, on a line of its own or continued with a backslash:

- ``--opt=value`` / ``--opt value``: the value, read as YAML reads a scalar (``0``, ``false``, ``True``);
- ``--opt`` followed by another option, a shell operator or the end of the command: ``FLAG`` (a
  ``store_true`` / ``store_false`` switch; the caller turns it into "not the default");
- a value that names a shell variable (``--opt $SYNC``) or a substitution: ``UNKNOWN``.

Comments are skipped. Nothing is run and nothing is followed: a script that sources another or builds
its command from variables gives ``UNKNOWN`` or nothing. The files read are capped (``MAX_FILES``,
``MAX_BYTES`` each), as the YAML configurations are.
"""

from __future__ import annotations

import ast
import itertools
import shlex
from pathlib import Path

from ddp_doctor.lint.context import FileContext, keyword
from ddp_doctor.lint.discover import exclude_patterns, iter_files
from ddp_doctor.lint.flags import UNKNOWN
from ddp_doctor.lint.option_defaults import YAML_EXCLUDES, yaml_scalar, yaml_settings
from ddp_doctor.lint.source import read_text

MAX_FILES = 2000
MAX_BYTES = 1_000_000
SHELL_SUFFIXES = (".sh",)
SHELL_OPERATORS = frozenset({";", "&&", "||", "|", "&", ">", ">>", "<", "2>", "2>&1", ")", "fi", "done"})


class _Flag:
    def __repr__(self) -> str:
        return "FLAG"


FLAG = _Flag()  # the option given with no value: a switch


def launch_files(root: Path) -> list[Path]:
    """The shell scripts shipped under ``root``."""
    patterns = exclude_patterns(root.resolve(), YAML_EXCLUDES)
    return list(itertools.islice(iter_files(root, patterns, SHELL_SUFFIXES), MAX_FILES))


def spellings(option: str) -> tuple[str, ...]:
    """``sync_bn`` / ``--sync-bn`` -> the long spellings a command line may use for it."""
    bare = option.lstrip("-")
    return tuple(dict.fromkeys((f"--{bare}", f"--{bare.replace('_', '-')}", f"--{bare.replace('-', '_')}")))


def launch_settings(
    files: list[Path], options: tuple[str, ...], root: Path | None = None
) -> list[tuple[object, str]]:
    """Every value the ``files`` give one of the long spellings ``options``: ``(value, file)`` with
    the file spelled from ``root`` when given."""
    found: list[tuple[object, str]] = []
    for path in files:
        text = read_text(path, MAX_BYTES)
        if text is None or not any(o in text for o in options):
            continue
        where = str(path.relative_to(root)) if root is not None and path.is_relative_to(root) else path.name
        for command in _commands(text):
            for value in _values(command, options):
                found.append((value, where))
    return found


def option_value(value: object, default: object) -> object:
    """What the run's option holds for a value ``launch_settings`` read: a bare switch is the
    opposite of a boolean default (``store_true`` when it defaults off), True otherwise."""
    if value is FLAG:
        return not default if isinstance(default, bool) or default is None else True
    return value


def spelled(option: str, value: object) -> str:
    """How a launch script wrote a value: ``--syncbn=0``, ``--find_unused_parameters``."""
    flag = option if option.startswith("-") else f"--{option}"
    return flag if value is FLAG else f"{flag}={value}"


def launched_values(ctx: FileContext, option: str) -> list[tuple[object, str]]:
    """The values the project's launch scripts give ``option`` (a ``dest`` or a long spelling);
    nothing outside project mode (a file linted alone has no shipped scripts)."""
    if ctx.project is None:
        return []
    values: list[tuple[object, str]] = ctx.project.launched_values(spellings(option))
    return values


def _commands(text: str) -> list[list[str]]:
    """The script's commands as shell words: backslash-continued lines joined, comments dropped; a
    line shlex cannot split (an open quote) split on blanks."""
    out: list[list[str]] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command, pending = pending + line, ""
        if not command.strip() or command.lstrip().startswith("#"):
            continue
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            words = command.split("#", 1)[0].split()
        out.append(words)
    return out


def _values(words: list[str], options: tuple[str, ...]) -> list[object]:
    values: list[object] = []
    for i, word in enumerate(words):
        name, eq, given = word.partition("=")
        if name not in options:
            continue
        if eq:
            values.append(_scalar(given))
            continue
        following = words[i + 1] if i + 1 < len(words) else None
        if following is None or _is_option(following) or following in SHELL_OPERATORS:
            values.append(FLAG)
        else:
            values.append(_scalar(following))
    return values


def _is_option(word: str) -> bool:
    return word.startswith("-") and not word[1:].replace(".", "", 1).isdigit()  # not ``-1``


def _scalar(text: str) -> object:
    if "$" in text or "`" in text:
        return UNKNOWN
    return yaml_scalar(text)


# accelerate's ``distributed_type`` values whose ``prepare`` wraps no DistributedDataParallel
SHARDED_ACCELERATE = frozenset({"FSDP", "DEEPSPEED", "MEGATRON_LM"})
ACCELERATE_PLUGINS = ("fsdp_plugin", "deepspeed_plugin", "megatron_lm_plugin")


def accelerate_shards(ctx: FileContext) -> bool:
    """accelerate's ``prepare`` wraps the model in FSDP or a DeepSpeed engine here, not in DDP: the
    file's ``Accelerator(...)`` is given an ``fsdp_plugin=``/``deepspeed_plugin=``, or (project mode)
    the shipped launch scripts run ``accelerate launch --config_file X.yaml`` and every such file says
    ``distributed_type: FSDP`` / ``DEEPSPEED`` (HALOs' ``accelerate_config/fsdp_*.yaml``). A config
    file that cannot be found, or any other launch, leaves the wrap unknown (DDP)."""
    for call in ctx.of_type(ast.Call):
        if ctx.call_qualname(call) == "accelerate.Accelerator" and any(
            (value := keyword(call, k)) is not None
            and not (isinstance(value, ast.Constant) and value.value is None)
            for k in ACCELERATE_PLUGINS
        ):
            return True
    project = ctx.project
    if project is None or not project.root.is_dir():
        return False
    launched = project.launched_values(spellings("config_file"))
    if not launched or _launches_without_config(launch_files(project.root)):
        return False
    for value, script in launched:
        if not isinstance(value, str):
            return False
        path = _config_path(project.root, script, value)
        if path is None:
            return False
        types = yaml_settings([path], "distributed_type")
        if not types or any(not isinstance(t, str) or t.upper() not in SHARDED_ACCELERATE for t in types):
            return False
    return True


def _launches_without_config(files: list[Path]) -> bool:
    """Some shipped script runs ``accelerate launch`` with no ``--config_file`` (accelerate's own
    ``examples/slurm/submit_multigpu.sh`` beside its FSDP one): that run takes the default
    configuration, DDP on several GPUs, so the configs the other scripts name do not decide."""
    options = spellings("config_file")
    for path in files:
        text = read_text(path, MAX_BYTES)
        if text is None or "accelerate" not in text:
            continue
        for command in _commands(text):
            joined = " ".join(command)
            if ("accelerate launch" in joined or "accelerate-launch" in joined) and not any(
                o in joined for o in options
            ):
                return True
    return False


def _config_path(root: Path, script: str, value: str) -> Path | None:
    """The file a launch script's ``--config_file`` names: from the project root (where such scripts are
    run from) or from the script's own folder."""
    for base in (root, (root / script).parent):
        path = base / value
        if path.is_file():
            return path
    return None
