"""How to launch the reference trainer on N local ranks, and how to watch it run.

`build_command` only builds the command (torch's own launcher module, `torch.distributed.run`,
i.e. torchrun; gloo on CPU; OMP_NUM_THREADS=1 per rank so N ranks do not oversubscribe the
cores). `completion` judges its exit: a rank aborting at interpreter teardown after the final
step (the known torch/gloo race) is a completed run with a note, not a failure. `run_command` runs any such command with its output in a log file and a progress bar fed
by rank 0's metrics.jsonl — so a wrapper (the probe's `ddp-doctor run`) can take the command and
launch it its own way.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from ddp_doctor.core.safe_io import open_log
from ddp_doctor.core.terminal import safe
from ddp_doctor.rundir.teardown import ExitStatus
from ddp_doctor.trainer.config import METRICS_FILE, SUMMARY_FILE, TrainConfig, config_to_argv

LOG_FILE = "launch.log"
POLL_SECONDS = 0.5


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1 (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class LaunchCommand:
    argv: list[str]
    env: dict[str, str]


def build_command(
    cfg: TrainConfig, nproc: int, port: int | None = None, python: str = sys.executable
) -> LaunchCommand:
    """`python -m torch.distributed.run --nproc_per_node N ... -m ddp_doctor.trainer <flags of cfg>`."""
    argv = [
        python,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(nproc),
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(port or free_port()),
        "-m",
        "ddp_doctor.trainer",
        *config_to_argv(cfg),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if cfg.out_dir is not None:
        # torchrun reports how failed ranks exited into OUT/launcher/ (launch/exits.py): what
        # `completion` needs to tell a teardown abort after the last step from a crash.
        from ddp_doctor.launch.exits import ENV_EXITS_DIR
        from ddp_doctor.launch.launcher import with_inject_path
        from ddp_doctor.rundir.teardown import EXITS_SUBDIR

        env[ENV_EXITS_DIR] = str(Path(cfg.out_dir) / EXITS_SUBDIR)
        env = with_inject_path(env)
    return LaunchCommand(argv=argv, env=env)


def completion(out_dir: str, code: int, steps: int, run_dir: Path | None = None) -> ExitStatus:
    """The trainer's exit judged (ddp_doctor.rundir.teardown): from the probe's rank files when it ran under
    the probe (`run_dir`), else from rank 0's final metrics and the launcher's failure reports."""
    from ddp_doctor.rundir.teardown import classify_run, classify_trainer

    if run_dir is not None:
        return classify_run(run_dir, code)
    return classify_trainer(out_dir, code, steps, METRICS_FILE)


def _last_step(metrics: Path) -> tuple[int, str]:
    """Steps completed and the latest logged loss, from rank 0's metrics file."""
    try:
        lines = metrics.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return 0, ""
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line being written right now
            continue
        loss = record["loss"]
        return int(record["step"]) + 1, f"loss {loss:.3f}" if isinstance(loss, float) else f"loss {loss}"
    return 0, ""


def run_command(
    command: LaunchCommand, out_dir: str, total_steps: int, console: Console | None = None
) -> int:
    """Run `command`, output to <out_dir>/launch.log, with a progress bar; return its exit code."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = console or Console()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics = out / METRICS_FILE
    with (
        open_log(out / LOG_FILE) as log,
        Progress(
            TextColumn("{task.fields[phase]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress,
    ):
        task = progress.add_task("", total=total_steps, phase="starting ranks")
        # A new session, so that Ctrl-C can stop torchrun and every rank it started, and only them.
        proc = subprocess.Popen(
            command.argv, env=command.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            while proc.poll() is None:
                done, loss = _last_step(metrics)
                if done:
                    progress.update(task, completed=done, description=loss, phase="training")
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            raise
        done, loss = _last_step(metrics)
        progress.update(task, completed=done, description=loss, phase="finished")
    return proc.returncode


def log_tail(out_dir: str, lines: int = 40) -> str:
    """The last lines of the launch log (shown when a run fails)."""
    path = Path(out_dir) / LOG_FILE
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def announce(console: Console, cfg: TrainConfig, world: int) -> None:
    """One line before a launch: what runs, on how many ranks, with which faults."""
    console.print(
        f"[bold]ddp-doctor[/] reference trainer: {cfg.preset} LLaMA, {world} CPU ranks "
        f"(gloo), micro-batch {cfg.micro_batch}, accumulation {cfg.accum}, "
        f"faults: {', '.join(cfg.faults) or 'none'}"
    )


def print_outcome(console: Console, out_dir: str, code: int, completed_note: str | None = None) -> None:
    """After a launch: the trainer's own summary, or the tail of its log when it failed.

    `completed_note`: the launcher failed only because a rank aborted at interpreter teardown after
    the last step (ddp_doctor.rundir.teardown); the run completed, and the note says so.
    """
    from rich.markup import escape

    summary = Path(out_dir) / SUMMARY_FILE
    if completed_note is not None:
        console.print(f"[yellow]launcher exit code {code}: {escape(safe(completed_note))}[/]")
        code = 0
    if code != 0 or not summary.exists():
        console.print(safe(log_tail(out_dir)), markup=False, highlight=False)  # the script's own output
        console.print(
            f"[red]trainer failed (exit code {code})[/]; full log: {escape(safe(Path(out_dir) / LOG_FILE))}"
        )
        return
    console.print(safe(summary.read_text(encoding="utf-8")), markup=False, highlight=False, end="")
    out = Path(out_dir)
    console.print(
        f"metrics: {safe(out / 'metrics.jsonl')}   launcher log: {safe(out / LOG_FILE)}", markup=False
    )
