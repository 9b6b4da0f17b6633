"""Getting the probe's options to ranks that DeepSpeed's multi-node runner starts (no torch).

`deepspeed train.py` on one node starts `python -m deepspeed.launcher.launch`, which starts the
ranks with the runner's whole environment: PYTHONPATH (the shim) and DDP_DOCTOR_* arrive as under
torchrun. With several hosts (a hostfile; pdsh, Open MPI, MPICH, Intel MPI, MVAPICH or Slurm
runners) the runner passes on only the variables whose names start with MLFLOW, PYTHON, MV2,
UCX (+ NCCL on CUDA) and the `KEY=VALUE` lines of a `.deepspeed_env` file, read from the home
directory and then the current directory, whose name is `$DS_ENV_FILE` when that is set
(deepspeed/launcher/runner.py: EXPORT_ENVS, DEEPSPEED_ENVIRONMENT_NAME/PATHS). PYTHONPATH gets
through; DDP_DOCTOR_RUN_DIR does not, so the ranks would run unprobed.

`ddp-doctor run -- deepspeed ...` therefore writes `RUN/launcher/deepspeed_env`: the lines of the
user's own `.deepspeed_env` files (as the runner would read them, in its order), then the probe's
variables, and points `DS_ENV_FILE` at it (an absolute name: `os.path.join(dir, name)` is then
the name itself). The user's files are read, never written. The remote nodes need the same
ddp-doctor installation path (the shim's directory travels in PYTHONPATH) and a run directory
on a file system they share.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ddp_doctor.probe import launch_env

ENV_FILE_VAR = "DS_ENV_FILE"
DEFAULT_NAME = ".deepspeed_env"
FILE_NAME = "deepspeed_env"  # in RUN/launcher/
# What the runner's add_export leaves unquoted; a value outside it is wrapped in "..." without
# escaping, so a value containing `"`, `$` or a backquote could not survive the remote shell.
_SAFE_AFTER_QUOTING = re.compile(r'[^"$`\\\n]*')


def is_deepspeed_runner(command: Sequence[str]) -> bool:
    return launch_env.launcher_name(command) == "deepspeed"


def user_lines(environ: Mapping[str, str], cwd: Path | None = None) -> list[str]:
    """The `KEY=VALUE` lines DeepSpeed's runner would export from the user's `.deepspeed_env` files."""
    name = environ.get(ENV_FILE_VAR, DEFAULT_NAME)
    out: list[str] = []
    for directory in (os.path.expanduser("~"), str(cwd or Path.cwd())):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out.extend(line for line in text.splitlines() if "=" in line)
    return out


def write_env_file(launcher_dir: Path, probe_env: Mapping[str, str], environ: Mapping[str, str]) -> Path:
    """Write RUN/launcher/deepspeed_env (the user's lines, then the probe's); return its path."""
    from ddp_doctor.core.safe_io import PRIVATE_FILE, write_text

    lines = user_lines(environ)
    skipped = []
    for key, value in probe_env.items():
        if _SAFE_AFTER_QUOTING.fullmatch(value):
            lines.append(f"{key}={value}")
        else:
            skipped.append(key)
    if skipped:
        import sys

        sys.stderr.write(
            f"ddp-doctor: {', '.join(skipped)} cannot pass DeepSpeed's multi-node runner "
            "(quotes or $ in the value); remote ranks run without them\n"
        )
    launcher_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = launcher_dir / FILE_NAME
    write_text(path, "".join(line + "\n" for line in lines), mode=PRIVATE_FILE)
    return path
