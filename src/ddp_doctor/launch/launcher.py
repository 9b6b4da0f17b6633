"""`ddp-doctor run`: start a training command with the probe injected, write the manifest.

The command runs as a child process with `inject/` first on PYTHONPATH and the probe options in
the environment, so every Python process it starts (every torchrun worker) loads the probe. The
manifest is written at start and rewritten atomically at exit with the exit code; signals sent
to ddp-doctor are forwarded to the command; the command's exit code is returned (128 + signal
number when it died from a signal, as shells report it).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ddp_doctor import __version__
from ddp_doctor.core.redact import is_secret_name, redact_argv, redact_value
from ddp_doctor.core.safe_io import PRIVATE_FILE, create_new
from ddp_doctor.launch import deepspeed_env
from ddp_doctor.launch.claim import RunDirBusy, claim, release
from ddp_doctor.launch.exits import ENV_EXITS_DIR
from ddp_doctor.probe import launch_env
from ddp_doctor.probe.interventions import ENV_VAR as INTERVENTIONS_ENV
from ddp_doctor.probe.options import ProbeOptions
from ddp_doctor.rundir.manifests import instance_manifest_path, instance_names
from ddp_doctor.rundir.records import RANKS_DIR, RUN_SCHEMA, manifest_path
from ddp_doctor.rundir.teardown import EXITS_SUBDIR

INJECT_DIR = Path(__file__).resolve().parent / "inject"
DEFAULT_RUNS_DIR = Path("ddp-doctor-runs")

# Environment variables that may reach the manifest: launcher, NCCL/torch and threading settings.
ENV_ALLOW_NAMES = frozenset(
    {
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_LAUNCH_BLOCKING",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "PYTORCH_CUDA_ALLOC_CONF",
        "GLOO_SOCKET_IFNAME",
        "CUBLAS_WORKSPACE_CONFIG",
    }
)
ENV_ALLOW_PREFIXES = ("NCCL_", "TORCH_", "TORCHELASTIC_", "ACCELERATE_")
# Even an allowed name is dropped when it looks like it holds a credential (ddp_doctor.core.redact).
PRIVATE_DIR = 0o700  # run directories (and ranks/, launcher/) are created owner-only
VERSIONED_PACKAGES = ("torch", "transformers", "accelerate", "numpy")


def allowed_env(environ: dict[str, str]) -> dict[str, str]:
    """The allow-listed part of `environ`, credentials removed (docs/run-format.md, manifest `env`)."""
    out = {}
    for name, value in environ.items():
        upper = name.upper()
        if upper not in ENV_ALLOW_NAMES and not upper.startswith(ENV_ALLOW_PREFIXES):
            continue
        if is_secret_name(name):
            continue
        out[name] = redact_value(value)
    return dict(sorted(out.items()))


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "ddp_doctor": __version__}
    for package in VERSIONED_PACKAGES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[package] = importlib.metadata.version(package)
    return versions


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def default_run_dir() -> Path:
    return DEFAULT_RUNS_DIR / time.strftime("run-%Y%m%d-%H%M%S", time.gmtime())


def write_manifest(run_dir: Path, manifest: dict[str, Any], path: Path | None = None) -> None:
    """Replace the manifest atomically: readers see the old or the new file, never half of one."""
    from ddp_doctor.core.safe_io import write_text

    write_text(path or manifest_path(run_dir), json.dumps(manifest, indent=2) + "\n", mode=PRIVATE_FILE)


def make_run_dir(run_dir: Path) -> None:
    """Create the run directory and its ranks/ readable by the owner only (0700): commands, hosts
    and losses are nobody else's business. A directory that already exists keeps its mode."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    for directory in (run_dir, run_dir / RANKS_DIR):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=PRIVATE_DIR)


# Runs the instrumented command given its argv and environment; returns its exit code. The default
# starts it in the foreground with signals forwarded; `ddp-doctor demo` passes one that logs to a
# file and shows progress.
Runner = Callable[[list[str], dict[str, str]], int]


def child_env(options: ProbeOptions, environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env.update(options.to_env())
    # torchrun-style launchers write how failed ranks exited here (launch/exits.py, ddp_doctor.rundir.teardown)
    env[ENV_EXITS_DIR] = str(Path(options.run_dir) / EXITS_SUBDIR)
    return with_inject_path(env)


def with_inject_path(env: dict[str, str]) -> dict[str, str]:
    """`env` with the sitecustomize shim's directory first on PYTHONPATH."""
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(INJECT_DIR) + (os.pathsep + existing if existing else "")
    return env


def run(
    command: list[str],
    options: ProbeOptions,
    environ: Mapping[str, str] | None = None,
    runner: Runner | None = None,
    require_fresh: bool = False,
) -> int:
    """Run `command` under the probe; return its exit code.

    The run directory is claimed first (ddp_doctor.launch.claim): RunDirBusy when another launcher
    holds it, or, with `require_fresh`, when it already holds a run. `environ` is the command's
    base environment (default: ours). Interventions travel in its
    `DDP_DOCTOR_SET` (JSON, see ddp_doctor.probe.interventions) and are recorded in the
    manifest, whether `run --set` or an outer tool such as `ablate` put them there.
    """
    run_dir = options.run_dir
    # One of several `ddp-doctor run`s sharing this directory (a node's torchrun agent, a Slurm
    # task: docs/probe.md, "Several nodes") claims per instance; ranks learn the name from
    # DDP_DOCTOR_NODE.
    name, expected = launch_env.instance(command, dict(os.environ if environ is None else environ))
    held = claim(run_dir, node=name)  # raises RunDirBusy: one launcher per run directory (or instance)
    try:
        if require_fresh and (manifest_path(run_dir).exists() or (name is None and instance_names(run_dir))):
            raise RunDirBusy(f"{run_dir} already holds a run; choose another --out")
        return _run_claimed(command, options, environ, runner, name, expected)
    finally:
        release(held)


def _run_claimed(
    command: list[str],
    options: ProbeOptions,
    environ: Mapping[str, str] | None,
    runner: Runner | None,
    name: str | None = None,
    expected: int | None = None,
) -> int:
    run_dir = options.run_dir
    make_run_dir(run_dir)
    base_env = dict(os.environ if environ is None else environ)
    path = claim_instance(run_dir, name) if name is not None else None
    manifest: dict[str, Any] = {
        "schema": RUN_SCHEMA,
        "command": redact_argv(command),  # `--api-key X` → `--api-key <redacted>` (ddp_doctor.core.redact)
        "cwd": os.getcwd(),
        "level": options.level,
        "every": options.every,
        "interventions": _interventions(base_env),
        "start": _now(),
        "host": socket.gethostname(),
        "versions": _versions(),
        "env": allowed_env(base_env),
    }  # `end` and `exit_code` are absent until the command has finished
    env = child_env(options, base_env)
    if name is not None:
        manifest.update(instance=name, instances_expected=expected)
        env[launch_env.ENV_NODE] = name
    if deepspeed_env.is_deepspeed_runner(command):  # its multi-node runner drops DDP_DOCTOR_*
        probe_vars = {k: v for k, v in env.items() if k.startswith("DDP_DOCTOR_")}
        env_file = deepspeed_env.write_env_file(run_dir / EXITS_SUBDIR, probe_vars, base_env)
        env[deepspeed_env.ENV_FILE_VAR] = str(env_file.resolve())
    write_manifest(run_dir, manifest, path)
    reserve = _reserve_space(run_dir)
    code = (runner or _run_foreground)(command, env)
    _finish_manifest(run_dir, manifest, path, code, reserve, instance=name)
    return code


# Held back while the command runs, freed just before the final manifest is written: a run
# directory on a file system the ranks filled up still gets its exit code and the note that the
# disk was full (a manifest is ~2 KB; tmpfs and ext4 allocate 4 KB pages/blocks).
RESERVE_BYTES = 16 * 1024
RESERVE_NAME = ".space-reserve"
# Free space below this when the command ends: the file system was (nearly) full, and records
# the ranks tried to write may be missing.
FULL_BELOW_BYTES = 64 * 1024


def _reserve_space(run_dir: Path) -> Path | None:
    path = run_dir / EXITS_SUBDIR / RESERVE_NAME
    try:
        path.parent.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        create_new(path, b"\0" * RESERVE_BYTES)
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        return None  # no room even for that (or a stale one from a crash): write what we can
    return path


def _finish_manifest(
    run_dir: Path,
    manifest: dict[str, Any],
    path: Path | None,
    code: int,
    reserve: Path | None,
    instance: str | None = None,
) -> None:
    """Add `end`, `exit_code`, `ranks` and, when writing failed or the disk is full, `write_errors`.

    Never raises: the exit code `ddp-doctor run` returns is the command's whatever happens here;
    a failure is said on stderr and, where the manifest can still be written, in it.
    """
    errors = _disk_full_note(run_dir)
    if reserve is not None:
        with contextlib.suppress(OSError):
            reserve.unlink()
    manifest.update(end=_now(), exit_code=code)
    try:
        manifest["ranks"] = len(list((run_dir / RANKS_DIR).glob("rank-*.jsonl")))
    except OSError as error:
        errors = [*errors, f"listing {RANKS_DIR}/: {error}"]
    if instance is None:  # one instance of several sees its own ranks only
        from ddp_doctor.launch.unreported import unreported_note

        manifest["unreported"] = unreported_note(run_dir)
    if errors:
        manifest["write_errors"] = errors
    try:
        write_manifest(run_dir, manifest, path)
    except OSError as error:
        target = path or manifest_path(run_dir)
        sys.stderr.write(
            f"ddp-doctor: could not write the final {target.name} ({error}); the command exited with "
            f"code {code}, and a report of {run_dir} will read it as still in progress\n"
        )
        return
    for note in errors:
        sys.stderr.write(f"ddp-doctor: {note}\n")


def _disk_full_note(run_dir: Path) -> list[str]:
    """["the file system ... is full ..."] when the run directory's file system has (almost) no
    free space left now that the command has ended; [] otherwise or when it cannot be asked."""
    try:
        st = os.statvfs(run_dir)
    except OSError:
        return []
    free = st.f_bavail * st.f_frsize
    if free >= FULL_BELOW_BYTES:
        return []
    return [
        f"the file system holding the run directory was full when the command ended ({free:,} bytes "
        f"free of {st.f_blocks * st.f_frsize:,}): records the ranks tried to write after that are "
        "missing; free space or choose another --out"
    ]


def claim_instance(run_dir: Path, name: str) -> Path:
    """Create `manifest.<name>.json` with O_EXCL: an instance of that name that already recorded
    here (a finished run, or a second agent with the same node rank) is refused."""
    if manifest_path(run_dir).exists():
        raise RunDirBusy(f"{run_dir} already holds a single-launcher run (manifest.json)")
    path = instance_manifest_path(run_dir, name)
    try:
        create_new(path)
    except FileExistsError:
        raise RunDirBusy(
            f"{run_dir} already holds {path.name}: another `ddp-doctor run` recorded as {name!r} here "
            "(each node needs its own --node_rank; a new run needs a new --out)"
        ) from None
    return path


def _interventions(environ: Mapping[str, str]) -> dict[str, str]:
    """The interventions object carried by DDP_DOCTOR_SET; {} when absent or not a JSON object."""
    try:
        value = json.loads(environ.get(INTERVENTIONS_ENV, "") or "{}")
    except json.JSONDecodeError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _run_foreground(command: list[str], env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(command, env=env)
    except FileNotFoundError as error:  # what a shell answers: 127 not found, 126 not executable
        sys.stderr.write(f"ddp-doctor: cannot start {command[0]!r}: {error}\n")
        return 127
    except OSError as error:  # permission denied, a directory, not an executable format
        sys.stderr.write(f"ddp-doctor: cannot execute {command[0]!r}: {error}\n")
        return 126
    return wait_forwarding_signals(child)


# Every signal a terminal or a job scheduler sends to end or poke a job. Stop/continue signals
# (TSTP, TTIN, TTOU, CONT) keep their default: a terminal sends them to the whole foreground
# process group, so ddp-doctor stops and resumes with the command, as a shell job would.
FORWARDED = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")
    if hasattr(signal, name)
)
SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel generated: the terminal's Ctrl-C, Ctrl-\


def wait_forwarding_signals(child: subprocess.Popen[Any]) -> int:
    """Wait for `child`, passing every FORWARDED signal on to it once; return its exit code
    (128 + N when signal N killed it, as shells report it). ddp-doctor never exits before it.

    A signal the terminal generated (Ctrl-C, Ctrl-\\: si_code SI_KERNEL) went to the whole
    foreground process group, the command included when it shares ours: passing it on again would
    give torchrun a second SIGINT in the middle of its shutdown. A signal sent to ddp-doctor's pid
    (`kill`, a scheduler) is passed on. Telling the two apart needs the siginfo, so the signals
    are blocked and taken with sigtimedwait; off the main thread (no signal handling there), or
    without sigtimedwait, the child is simply waited for.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "sigtimedwait"):
        return _exit_code(child.wait())
    early: list[int] = []

    def record(signum: int, frame: Any) -> None:  # delivered before the block, or to another thread
        early.append(signum)

    # Installed only now, after the command started: it inherited our dispositions as they were
    # (`nohup`'s ignored SIGHUP, a background job's ignored SIGINT/SIGQUIT). A signal ignored here
    # is passed on all the same: the command ignores it too, or handles it as it would bare
    # (torchrun installs its own SIGQUIT handler whatever it inherited).
    previous = {signum: signal.signal(signum, record) for signum in FORWARDED}
    waited = (*FORWARDED, signal.SIGCHLD)
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        shares_group = _same_process_group(child)
        while child.poll() is None:
            while early:
                _forward(child, early.pop(0))
            info = signal.sigtimedwait(waited, 1.0)
            if info is None or info.si_signo == signal.SIGCHLD:
                continue
            if info.si_code == SI_KERNEL and shares_group:
                continue  # the terminal sent it to the command too
            _forward(child, info.si_signo)
        return _exit_code(child.returncode)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # pending ones reach `record`
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _same_process_group(child: subprocess.Popen[Any]) -> bool:
    try:
        return os.getpgid(child.pid) == os.getpgrp()
    except OSError:
        return True


def _forward(child: subprocess.Popen[Any], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(signum)


def _exit_code(code: int) -> int:
    return 128 - code if code < 0 else code
