"""Slurm: `srun ddp-doctor run -- python train.py` (one `ddp-doctor run` per task) and
`ddp-doctor run -- srun ...` (one for the job), tested with Slurm's variables set by hand (no
Slurm here); ranks placed from SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS when RANK is unset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import teardown_race

from ddp_doctor.analysis.diagnose import diagnose
from ddp_doctor.probe.launch_env import instance, max_nodes, placement
from ddp_doctor.trainer.launch import free_port
from probe.helpers import DDP_DOCTOR, RUN_TIMEOUT_S, SCRIPTS, base_env, kind, read_rank


def _slurm_env(procid: int, ntasks: int, nodes: int = 1, **extra: str) -> dict[str, str]:
    per_node = ntasks // nodes
    env = base_env(
        SLURM_JOB_ID="4242",
        SLURM_STEP_ID="0",
        SLURM_PROCID=str(procid),
        SLURM_NTASKS=str(ntasks),
        SLURM_LOCALID=str(procid % per_node),
        SLURM_NODEID=str(procid // per_node),
        SLURM_NTASKS_PER_NODE=str(per_node),
        **extra,
    )
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"):
        env.pop(name, None)
    return env


def _srun_tasks(out: Path, script: str, ntasks: int, nodes: int, **extra: str) -> None:
    """What `srun --ntasks N ddp-doctor run --out OUT -- python SCRIPT` starts: one run per task."""
    procs = [
        subprocess.Popen(
            [*DDP_DOCTOR, "run", "--out", str(out), "--", sys.executable, str(SCRIPTS / script)],
            env=_slurm_env(task, ntasks, nodes, **extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for task in range(ntasks)
    ]
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        assert proc.returncode == 0 or teardown_race.tolerated(done, out, "srun task"), stderr[-3000:]


def test_placement_falls_back_to_slurm_then_open_mpi_when_the_launcher_set_nothing() -> None:
    slurm = placement(
        {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "4(x2)",
         "SLURM_NODEID": "1"}
    )  # fmt: skip
    assert (slurm.rank, slurm.world_size, slurm.local_rank, slurm.local_world_size) == (5, 8, 1, 4)
    assert slurm.node == "node-1"
    torchrun = placement({"RANK": "2", "WORLD_SIZE": "4", "SLURM_PROCID": "0", "GROUP_RANK": "1"})
    assert (torchrun.rank, torchrun.world_size, torchrun.node) == (2, 4, "node-1")
    mpi = placement({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"})
    assert (mpi.rank, mpi.world_size, mpi.node) == (3, 4, None)
    assert placement({"DDP_DOCTOR_NODE": "node-7", "GROUP_RANK": "0"}).node == "node-7"
    assert placement({}).rank == 0 and placement({"RANK": "x"}).rank == 0


def test_which_ddp_doctor_run_instances_share_a_directory() -> None:
    py = [sys.executable, "-m", "torch.distributed.run"]
    assert instance(["torchrun", "--nnodes", "2", "--node_rank", "1", "t.py"], {}) == ("node-1", 2)
    assert instance([*py, "--nnodes=1:4", "--node-rank=3", "t.py", "--nnodes", "9"], {}) == ("node-3", 4)
    assert instance(["torchrun", "--nnodes", "2", "t.py"], {"SLURM_NODEID": "1"}) == ("node-1", 2)
    assert instance(["torchrun", "--nnodes", "2", "t.py"], {})[0].startswith("host-")
    assert instance(["torchrun", "--nproc_per_node", "4", "t.py"], {}) == (None, None)
    slurm_task = {"SLURM_STEP_ID": "0", "SLURM_PROCID": "3", "SLURM_NTASKS": "4"}
    assert instance(["python", "train.py"], slurm_task) == ("task-3", 4)
    # the ranks' launcher is srun (or torchrun) itself: one ddp-doctor run for the job
    assert instance(["srun", "python", "train.py"], slurm_task) == (None, None)
    assert instance(["python", "train.py"], {**slurm_task, "SLURM_NTASKS": "1"}) == (None, None)
    assert instance(["python", "train.py"], {"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}) == (
        None,
        None,
    )  # sbatch
    assert max_nodes(["torchrun", "--nnodes", "bad", "t.py"]) is None


def test_srun_ddp_doctor_run_per_task_records_every_task_by_its_slurm_rank(tmp_path: Path) -> None:
    """No process group at all: the rank files can only be told apart by SLURM_PROCID."""
    out = tmp_path / "run"
    _srun_tasks(out, "single_process.py", ntasks=2, nodes=2)
    assert sorted(p.name for p in out.glob("manifest*.json")) == [
        "manifest.task-0.json",
        "manifest.task-1.json",
    ]
    for task in (0, 1):
        header = read_rank(out, task)[0]
        assert (header["rank"], header["world_size"], header["node"]) == (task, 2, f"task-{task}")
        assert len(kind(read_rank(out, task), "step")) == 3
    info = diagnose(out).run_info
    assert info["world_size"] == 2 and info["ranks_present"] == [0, 1] and not info["in_progress"]


@pytest.mark.slow
def test_srun_ddp_script_with_slurm_ranks_records_a_ddp_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _srun_tasks(out, "slurm_ddp.py", ntasks=2, nodes=1, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    for task in (0, 1):
        records = read_rank(out, task)
        assert records[0]["rank"] == task and records[0]["local_rank"] == task
        assert kind(records, "config", "ddp") and len(kind(records, "step")) == 3
        assert all(s["sync"][-1] > 0 and s["grad_sq_global"][-1] is not None for s in kind(records, "step"))
    manifest = json.loads((out / "manifest.task-1.json").read_text())
    assert manifest["instance"] == "task-1" and manifest["env"].get("MASTER_ADDR") == "127.0.0.1"
