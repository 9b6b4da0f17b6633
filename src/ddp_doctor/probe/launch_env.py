"""Where a process sits in the job, from what launchers put in the environment (no torch).

Two questions, answered from the environment and the command line only:

* `placement(environ)`: this process's rank, world size, local rank and node, for the rank
  header before (or without) a process group. torchrun/DeepSpeed/accelerate set `RANK`,
  `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE` and torchrun `GROUP_RANK` (the node's rank);
  under `srun python train.py` only Slurm's variables exist (`SLURM_PROCID`, `SLURM_NTASKS`,
  `SLURM_LOCALID`, `SLURM_NTASKS_PER_NODE`, `SLURM_NODEID`), under `mpirun` Open MPI's
  (`OMPI_COMM_WORLD_RANK`, ...). The launcher's own variables win; Slurm's, then Open MPI's, fill in.
* `instance(command, environ)`: whether this `ddp-doctor run` is one of several writing into one
  shared run directory (docs/probe.md, "Several nodes"), and under which name it writes its
  manifest: `node-<N>` for one torchrun agent per node (`--nnodes` above 1, node rank from
  `--node_rank`, `NODE_RANK`, `SLURM_NODEID`, else the host name), `task-<N>` for one
  `ddp-doctor run` per Slurm task (`srun ddp-doctor run -- python train.py`), None for a single
  launcher that starts every rank itself (plain torchrun, `ddp-doctor run -- srun ...`, the
  DeepSpeed runner).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Set by `ddp-doctor run` for the processes it starts when it is one of several instances.
ENV_NODE = "DDP_DOCTOR_NODE"

# (launcher's own name, Slurm's, Open MPI's) for each field of the placement.
_RANK = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")
_WORLD = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")
_LOCAL_RANK = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
# DeepSpeed's launcher (deepspeed.launcher.launch) sets LOCAL_SIZE and CROSS_RANK (its node rank).
_LOCAL_WORLD = ("LOCAL_WORLD_SIZE", "LOCAL_SIZE", "SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE")
_NODE_RANK = ("GROUP_RANK", "CROSS_RANK", "SLURM_NODEID", "OMPI_COMM_WORLD_NODE_RANK")

# Commands that start the ranks themselves: a `ddp-doctor run` around one of them is the only
# instance on its node (or in the whole job), whatever Slurm variables it inherited.
_LAUNCHERS = ("torchrun", "srun", "mpirun", "mpiexec", "deepspeed", "accelerate")
_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "deepspeed.launcher.runner")


@dataclass(frozen=True)
class Placement:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node: str | None  # DDP_DOCTOR_NODE, else "node-<node rank>" where a launcher says, else None


def _first_int(environ: Mapping[str, str], names: Sequence[str], default: int) -> int:
    for name in names:
        match = re.match(r"\s*(\d+)", environ.get(name, ""))  # SLURM_NTASKS_PER_NODE may read "4(x2)"
        if match:
            return int(match.group(1))
    return default


def placement(environ: Mapping[str, str] | None = None) -> Placement:
    env = os.environ if environ is None else environ
    node = env.get(ENV_NODE) or None
    if node is None:
        node_rank = _first_int(env, _NODE_RANK, -1)
        node = f"node-{node_rank}" if node_rank >= 0 else None
    return Placement(
        rank=_first_int(env, _RANK, 0),
        world_size=_first_int(env, _WORLD, 1),
        local_rank=_first_int(env, _LOCAL_RANK, 0),
        local_world_size=_first_int(env, _LOCAL_WORLD, 1),
        node=node,
    )


def _option(command: Sequence[str], *names: str) -> str | None:
    """Value of `--name V` / `--name=V` in a launcher command line (first occurrence)."""
    for i, word in enumerate(command):
        for name in names:
            if word == name and i + 1 < len(command):
                return command[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def launcher_name(command: Sequence[str]) -> str | None:
    """The launcher `command` starts with: torchrun, srun, mpirun, mpiexec, deepspeed, accelerate."""
    return _launcher(command)


def _launcher(command: Sequence[str]) -> str | None:
    """The launcher `command` starts with (also as `python -m MODULE`), else None."""
    if not command:
        return None
    first = os.path.basename(command[0])
    if first in _LAUNCHERS:
        return first
    if (
        first.startswith("python")
        and len(command) > 2
        and command[1] == "-m"
        and command[2] in _LAUNCHER_MODULES
    ):
        return "torchrun" if command[2].startswith("torch.") else "deepspeed"
    return None


def _torchrun_args(command: Sequence[str]) -> Sequence[str]:
    """torchrun's own options: the words before the training script (the first `*.py` or `-m`)."""
    start = 3 if len(command) > 2 and command[1] == "-m" else 1  # `python -m torch.distributed.run`
    for i, word in enumerate(command[start:], start=start):
        if word.endswith(".py") or word in ("-m", "--module"):
            return command[:i]
    return command


def max_nodes(command: Sequence[str]) -> int | None:
    """torchrun's `--nnodes N` or `--nnodes MIN:MAX` (the maximum); None when not given."""
    value = _option(_torchrun_args(command), "--nnodes")
    if value is None:
        return None
    match = re.fullmatch(r"\s*(\d+)(?::(\d+))?\s*", value)
    if not match:
        return None
    return int(match.group(2) or match.group(1))


def instance(
    command: Sequence[str], environ: Mapping[str, str] | None = None
) -> tuple[str | None, int | None]:
    """(name of this `ddp-doctor run` among several sharing a run directory, how many there are).

    (None, None): the only instance; its manifest is `manifest.json`.
    """
    env = os.environ if environ is None else environ
    launcher = _launcher(command)
    if launcher == "torchrun":
        nodes = max_nodes(command)
        if nodes is None or nodes <= 1:
            return None, None
        args = _torchrun_args(command)
        node_rank = _option(args, "--node_rank", "--node-rank")
        if node_rank is None:
            node_rank = env.get("NODE_RANK") or env.get("SLURM_NODEID")
        if node_rank is not None and node_rank.strip().isdigit():
            return f"node-{int(node_rank)}", nodes
        return f"host-{_safe(socket.gethostname())}", nodes
    if launcher is None and "RANK" not in env and env.get("SLURM_STEP_ID") is not None:
        tasks = _first_int(env, ("SLURM_NTASKS",), 1)
        proc = env.get("SLURM_PROCID", "")
        if tasks > 1 and proc.strip().isdigit():
            return f"task-{int(proc)}", tasks
    return None, None


def _safe(name: str) -> str:
    """A host name as a file-name part: letters, digits, `.`, `-` and `_` only."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:64] or "unknown"
